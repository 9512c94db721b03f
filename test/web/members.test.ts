// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findWorkspaceOwner } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import {
  type AppFixture,
  acceptAsNewAccount,
  startAppFixture,
  type WebClient,
  webClient,
} from '../helpers/web.ts';

const SCRIPT = '<script>alert("owned")</script>';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

async function ownerOfNewWorkspace(fixture: AppFixture, name?: string) {
  const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com', name });
  const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
  return { workspaceId, owner };
}

/** `by` invites the address from the Members page, and the invitee accepts with a new account. */
async function invite(
  fixture: AppFixture,
  by: WebClient,
  workspaceId: string,
  email: string,
  role: string,
): Promise<WebClient> {
  await by.get(`/w/${workspaceId}/members`);
  const sent = await by.post(`/w/${workspaceId}/members/invitations`, { email, role });
  assert.equal(sent.status, 303, sent.body);
  assert.equal(sent.location, `/w/${workspaceId}/members?notice=invited`);
  return acceptAsNewAccount(fixture.runtime.app, await fixture.latestInvitationPath(email));
}

async function memberId(fixture: AppFixture, workspaceId: string, email: string): Promise<string> {
  const row = await fixture.runtime.database.db
    .selectFrom('workspace_members')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email)
    .executeTakeFirstOrThrow();
  return row.id;
}

async function rolesIn(fixture: AppFixture, workspaceId: string) {
  const rows = await fixture.runtime.database.db
    .selectFrom('workspace_members')
    .select(['email', 'role'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('email')
    .execute();
  return Object.fromEntries(rows.map((row) => [row.email, row.role]));
}

describe(`the Members page on ${testDialect}`, () => {
  it('lists members with role and join date and the pending invitations; the invitation email asks the address to join as admin', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture, 'Acme');
    await owner.get(`/w/${workspaceId}/members`);
    const sent = await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: 'grace@example.com',
      role: 'admin',
    });
    assert.equal(sent.status, 303);
    const page = await owner.get(sent.location ?? '');
    assert.equal(page.status, 200);
    assert.match(page.body, /Invitation sent\./);
    // Addresses wrap after the @ and before dots, never mid-word.
    assert.match(page.body, /owner@<wbr>example<wbr>\.com <span class="muted">\(you\)<\/span>/);
    assert.match(page.body, /<td role="cell" data-label="Role">owner<\/td>/);
    assert.match(page.body, /<time datetime="2026-03-01T12:00:00.000Z">1 Mar 2026, 12:00 UTC<\/time>/);
    assert.match(
      page.body,
      /Pending invitations[\s\S]*grace@<wbr>example<wbr>\.com[\s\S]*admin[\s\S]*by owner@example.com/,
    );
    assert.match(page.body, /<option value="owner">owner<\/option>/, 'owners may invite owners');

    const invitationPath = await fixture.latestInvitationPath('grace@example.com');
    const mail = fixture.sent.filter((message) => message.to === 'grace@example.com').at(-1);
    assert.ok(mail);
    assert.match(mail.text, /join the compliance workspace "Acme" as admin/);
    const invitation = await webClient(fixture.runtime.app).get(invitationPath);
    assert.match(invitation.body, /to become the workspace(&#39;|')s admin/);
  });

  it('lists a member, and writes to an owner, at the address their account has now, after they changed it', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture, 'Acme');
    await owner.get('/account');
    const asked = await owner.post('/account/email', {
      new_email: 'owner@new.example',
      password: 'correct horse battery staple',
    });
    assert.equal(asked.status, 200, asked.body);
    await fixture.runtime.jobs.drain();
    const link = fixture.sent
      .filter((mail) => mail.to === 'owner@new.example')
      .at(-1)
      ?.text.match(/\/account\/email\/emc_[A-Za-z0-9_-]{43}/)?.[0];
    assert.ok(link, 'a confirmation link went to the new address');
    await owner.get(link);
    assert.equal((await owner.post(link, {})).status, 200);

    const page = await owner.get(`/w/${workspaceId}/members`);
    assert.match(page.body, /owner@<wbr>new<wbr>\.example <span class="muted">\(you\)<\/span>/);
    assert.doesNotMatch(page.body, /owner@example.com/);
    assert.equal(
      (await findWorkspaceOwner(fixture.runtime.database.db, workspaceId))?.email,
      'owner@new.example',
    );
    const membership = await fixture.runtime.database.db
      .selectFrom('workspace_members')
      .select('email')
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirstOrThrow();
    assert.equal(membership.email, 'owner@new.example', 'the membership moved with the address');
    await owner.get(`/w/${workspaceId}/members`);
    const again = await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: 'owner@new.example',
      role: 'admin',
    });
    assert.equal(again.status, 409, 'the new address is a member already');
    await owner.get(`/w/${workspaceId}/members`);
    const old = await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: 'owner@example.com',
      role: 'member',
    });
    assert.equal(old.status, 303, 'the old address is free for whoever holds it next');
  });

  it('takes an invited admin end to end: Integrations open, then 403 as a member, then 404 once removed', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    const admin = await invite(fixture, owner, workspaceId, 'grace@example.com', 'admin');
    assert.equal((await admin.get(`/w/${workspaceId}/integrations`)).status, 200);
    const adminsPage = await admin.get(`/w/${workspaceId}/members`);
    assert.match(adminsPage.body, /Invite a teammate/);
    assert.doesNotMatch(adminsPage.body, /<option value="owner">/, 'admins cannot invite owners');

    const grace = await memberId(fixture, workspaceId, 'grace@example.com');
    await owner.get(`/w/${workspaceId}/members`);
    const changed = await owner.post(`/w/${workspaceId}/members/${grace}/role`, { role: 'member' });
    assert.equal(changed.status, 303);
    assert.equal(changed.location, `/w/${workspaceId}/members?notice=role`);
    assert.equal((await admin.get(`/w/${workspaceId}/integrations`)).status, 403);

    await owner.get(`/w/${workspaceId}/members`);
    const removed = await owner.post(`/w/${workspaceId}/members/${grace}/remove`, {});
    assert.equal(removed.status, 303);
    for (const path of ['', '/members', '/integrations']) {
      const answer = await admin.get(`/w/${workspaceId}${path}`);
      assert.equal(answer.status, 404, path);
    }
    assert.doesNotMatch((await admin.get('/workspaces')).body, new RegExp(workspaceId));
  });

  it('shows members a read-only page and answers 403 to every management form they post', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    const member = await invite(fixture, owner, workspaceId, 'member@example.com', 'member');
    await owner.get(`/w/${workspaceId}/members`);
    await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: 'pending@example.com',
      role: 'member',
    });
    const [pending] = await fixture.runtime.database.db
      .selectFrom('workspace_invitations')
      .select('id')
      .where('email', '=', 'pending@example.com')
      .execute();
    assert.ok(pending);
    const ownerId = await memberId(fixture, workspaceId, 'owner@example.com');

    const page = await member.get(`/w/${workspaceId}/members`);
    assert.equal(page.status, 200);
    assert.match(page.body, /owner@example.com/);
    assert.match(page.body, /member@example.com/);
    assert.doesNotMatch(page.body, /pending@example.com/, 'invitations are for owners and admins');
    assert.doesNotMatch(page.body, /Invite a teammate|Change role|Remove|Transfer ownership/);
    assert.match(page.body, /Leave the workspace/);

    const forms: [string, Record<string, string>][] = [
      [`/w/${workspaceId}/members/invitations`, { email: 'friend@example.com', role: 'member' }],
      [`/w/${workspaceId}/members/invitations/${pending.id}/resend`, {}],
      [`/w/${workspaceId}/members/invitations/${pending.id}/revoke`, {}],
      [`/w/${workspaceId}/members/${ownerId}/role`, { role: 'member' }],
      [`/w/${workspaceId}/members/${ownerId}/remove`, {}],
      [`/w/${workspaceId}/members/transfer`, { new_owner: ownerId, step_down: 'yes' }],
    ];
    for (const [url, form] of forms) {
      await member.get(`/w/${workspaceId}/members`);
      const answer = await member.post(url, form);
      assert.equal(answer.status, 403, url);
      assert.equal(errorCodeOf(answer.body), 'forbidden', url);
    }
    assert.deepEqual(await rolesIn(fixture, workspaceId), {
      'member@example.com': 'member',
      'owner@example.com': 'owner',
    });
    assert.equal(fixture.sent.filter((mail) => mail.to === 'friend@example.com').length, 0);

    const stranger = await acceptAsNewAccount(
      fixture.runtime.app,
      (await fixture.provision({ email: 'stranger@example.com' })).invitationPath,
    );
    assert.equal((await stranger.get(`/w/${workspaceId}/members`)).status, 404);
    await stranger.get('/workspaces');
    assert.equal((await stranger.post(`/w/${workspaceId}/members/${ownerId}/remove`, {})).status, 404);
    assert.equal((await webClient(fixture.runtime.app).get(`/w/${workspaceId}/members`)).status, 303);
  });

  it('keeps admins away from owners: no role change, removal or owner role, with a 403 naming the reason', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    const admin = await invite(fixture, owner, workspaceId, 'admin@example.com', 'admin');
    await invite(fixture, owner, workspaceId, 'member@example.com', 'member');
    const ownerId = await memberId(fixture, workspaceId, 'owner@example.com');
    const memberRow = await memberId(fixture, workspaceId, 'member@example.com');

    const page = await admin.get(`/w/${workspaceId}/members`);
    assert.doesNotMatch(page.body, new RegExp(`/members/${ownerId}/`), 'no controls on the owner row');
    for (const [url, form] of [
      [`/w/${workspaceId}/members/${ownerId}/role`, { role: 'member' }],
      [`/w/${workspaceId}/members/${ownerId}/remove`, {}],
      [`/w/${workspaceId}/members/${memberRow}/role`, { role: 'owner' }],
      [`/w/${workspaceId}/members/invitations`, { email: 'boss@example.com', role: 'owner' }],
    ] as const) {
      await admin.get(`/w/${workspaceId}/members`);
      const answer = await admin.post(url, form);
      assert.equal(answer.status, 403, url);
      assert.equal(errorCodeOf(answer.body), 'forbidden');
      assert.match(answer.body, /admins cannot change owners/);
    }
    await admin.get(`/w/${workspaceId}/members`);
    assert.equal(
      (await admin.post(`/w/${workspaceId}/members/${memberRow}/role`, { role: 'admin' })).status,
      303,
    );
    assert.deepEqual(await rolesIn(fixture, workspaceId), {
      'admin@example.com': 'admin',
      'member@example.com': 'admin',
      'owner@example.com': 'owner',
    });
  });

  it('refuses to demote, remove or let go the last owner (409 last_owner), and lets a member leave', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    const member = await invite(fixture, owner, workspaceId, 'member@example.com', 'member');
    const ownerId = await memberId(fixture, workspaceId, 'owner@example.com');

    const page = await owner.get(`/w/${workspaceId}/members`);
    assert.match(page.body, /The only owner/);
    assert.match(page.body, /You are the workspace(&#39;|')s only owner/);
    for (const [url, form] of [
      [`/w/${workspaceId}/members/${ownerId}/role`, { role: 'admin' }],
      [`/w/${workspaceId}/members/${ownerId}/remove`, {}],
      [`/w/${workspaceId}/members/leave`, {}],
    ] as const) {
      await owner.get(`/w/${workspaceId}/members`);
      const answer = await owner.post(url, form);
      assert.equal(answer.status, 409, url);
      assert.equal(errorCodeOf(answer.body), 'last_owner');
      assert.match(answer.body, /A workspace needs at least one owner/);
    }

    await member.get(`/w/${workspaceId}/members`);
    const left = await member.post(`/w/${workspaceId}/members/leave`, {});
    assert.equal(left.status, 303);
    assert.equal(left.location, '/workspaces');
    assert.equal((await member.get(`/w/${workspaceId}`)).status, 404);
    assert.deepEqual(await rolesIn(fixture, workspaceId), { 'owner@example.com': 'owner' });
  });

  it('transfers ownership: the new owner and the old one stepping down to admin in one form', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    await invite(fixture, owner, workspaceId, 'heir@example.com', 'member');
    const heir = await memberId(fixture, workspaceId, 'heir@example.com');
    await owner.get(`/w/${workspaceId}/members`);
    const transferred = await owner.post(`/w/${workspaceId}/members/transfer`, {
      new_owner: heir,
      step_down: 'yes',
    });
    assert.equal(transferred.status, 303);
    assert.deepEqual(await rolesIn(fixture, workspaceId), {
      'heir@example.com': 'owner',
      'owner@example.com': 'admin',
    });
    const page = await owner.get(transferred.location ?? '');
    assert.match(page.body, /Ownership transferred\./);
    assert.doesNotMatch(page.body, /Transfer ownership/, 'admins cannot transfer ownership');
    assert.equal((await owner.post(`/w/${workspaceId}/members/transfer`, { new_owner: heir })).status, 403);
  });

  it('resends and revokes a pending invitation; a revoked link says so and offers no fresh link', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    await owner.get(`/w/${workspaceId}/members`);
    await owner.post(`/w/${workspaceId}/members/invitations`, { email: 'ann@example.com', role: 'member' });
    const firstPath = await fixture.latestInvitationPath('ann@example.com');
    const invitationId = async () =>
      (
        await fixture.runtime.database.db
          .selectFrom('workspace_invitations')
          .select('id')
          .where('email', '=', 'ann@example.com')
          .where('revoked_at', 'is', null)
          .executeTakeFirstOrThrow()
      ).id;

    await owner.get(`/w/${workspaceId}/members`);
    const resent = await owner.post(
      `/w/${workspaceId}/members/invitations/${await invitationId()}/resend`,
      {},
    );
    assert.equal(resent.location, `/w/${workspaceId}/members?notice=resent`);
    const secondPath = await fixture.latestInvitationPath('ann@example.com');
    assert.notEqual(secondPath, firstPath);
    assert.match(
      (await webClient(fixture.runtime.app).get(firstPath)).body,
      /This invitation link was replaced/,
    );

    await owner.get(`/w/${workspaceId}/members`);
    const revoked = await owner.post(
      `/w/${workspaceId}/members/invitations/${await invitationId()}/revoke`,
      {},
    );
    assert.equal(revoked.location, `/w/${workspaceId}/members?notice=revoked`);
    assert.match((await owner.get(revoked.location ?? '')).body, /No pending invitations\./);

    const visitor = webClient(fixture.runtime.app);
    const withdrawn = await visitor.get(secondPath);
    assert.match(withdrawn.body, /This invitation was withdrawn/);
    assert.doesNotMatch(withdrawn.body, /Send a fresh invitation|Accept and open/);
    await visitor.get('/sign-in');
    const accept = await visitor.post(`${secondPath}/accept`, { password: 'correct horse battery staple' });
    assert.equal(accept.status, 409);
    const fresh = await visitor.post(`${firstPath}/resend`, {});
    assert.equal(fresh.status, 409);
    assert.match(fresh.body, /withdrawn, so it cannot be sent again/);
  });

  it('answers bad input with the form again (400) and unknown ids with 404, never a 500', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    await owner.get(`/w/${workspaceId}/members`);
    const badEmail = await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: 'nope',
      role: 'member',
    });
    assert.equal(badEmail.status, 400);
    assert.equal(errorCodeOf(badEmail.body), 'invalid_email');
    assert.match(badEmail.body, /<a href="#email">Enter an email address/);
    assert.match(badEmail.body, /value="nope"/, 'the form keeps what was typed');
    const badRole = await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: 'a@example.com',
      role: 'king',
    });
    assert.equal(badRole.status, 400);
    assert.equal(errorCodeOf(badRole.body), 'invalid_role');
    const self = await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: 'OWNER@example.com',
      role: 'admin',
    });
    assert.equal(self.status, 409);
    assert.equal(errorCodeOf(self.body), 'already_member');
    for (const url of [
      `/w/${workspaceId}/members/member_unknown/role`,
      `/w/${workspaceId}/members/%00/remove`,
      `/w/${workspaceId}/members/invitations/invite_unknown/revoke`,
    ]) {
      const answer = await owner.post(url, { role: 'admin' });
      assert.equal(answer.status, 404, url);
      assert.equal(errorCodeOf(answer.body), 'not_found');
    }
    const noRole = await owner.post(
      `/w/${workspaceId}/members/${await memberId(fixture, workspaceId, 'owner@example.com')}/role`,
      {},
    );
    assert.equal(noRole.status, 400);
    const unknownNotice = await owner.get(`/w/${workspaceId}/members?notice=__proto__`);
    assert.equal(unknownNotice.status, 200);
    assert.doesNotMatch(unknownNotice.body, /class="notice"/);
  });

  it("renders stored script in the workspace's name and markup characters in an address as text", async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture, `Acme ${SCRIPT}`);
    await owner.get(`/w/${workspaceId}/members`);
    const refused = await owner.post(`/w/${workspaceId}/members/invitations`, {
      email: `${SCRIPT}@example.com`,
      role: 'member',
    });
    assert.equal(refused.status, 400, 'markup is not an address');
    const odd = `o'hara&co@example.com`;
    await owner.post(`/w/${workspaceId}/members/invitations`, { email: odd, role: 'member' });
    await acceptAsNewAccount(fixture.runtime.app, await fixture.latestInvitationPath(odd));
    const page = await owner.get(`/w/${workspaceId}/members`);
    assert.ok(!page.body.includes(SCRIPT));
    assert.match(page.body, /Acme &lt;script&gt;alert\(&quot;owned&quot;\)&lt;\/script&gt;: Members/);
    assert.match(page.body, /o&#39;hara&amp;co@example.com/);
    assert.doesNotMatch(page.body, /o'hara/);
    assert.doesNotMatch(page.body, /<script>/, 'the only scripts are external files');
  });
});
