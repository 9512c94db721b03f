// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import {
  type AppFixture,
  acceptAsNewAccount,
  startAppFixture,
  type WebClient,
  webClient,
} from '../helpers/web.ts';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

async function ownerOfNewWorkspace(fixture: AppFixture, name?: string) {
  const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com', name });
  const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
  return { workspaceId, owner };
}

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
  return acceptAsNewAccount(fixture.runtime.app, await fixture.latestInvitationPath(email));
}

async function nameOf(fixture: AppFixture, workspaceId: string): Promise<string> {
  const row = await fixture.runtime.database.db
    .selectFrom('workspaces')
    .select('name')
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return row.name;
}

describe(`the Settings page on ${testDialect}`, () => {
  it('lets an owner rename the workspace: the new name shows on every page, with an audit event and a webhook event', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture, 'Acme');
    const overview = await owner.get(`/w/${workspaceId}`);
    assert.match(overview.body, new RegExp(`href="/w/${workspaceId}/settings"`), 'the nav links Settings');
    const page = await owner.get(`/w/${workspaceId}/settings`);
    assert.equal(page.status, 200);
    assert.match(page.body, /<input id="name" name="name" type="text"[^>]*value="Acme">/);

    const renamed = await owner.post(`/w/${workspaceId}/settings/name`, { name: '  Acme Holdings  ' });
    assert.equal(renamed.status, 303, renamed.body);
    assert.equal(renamed.location, `/w/${workspaceId}/settings?notice=renamed`);
    assert.match((await owner.get(renamed.location ?? '')).body, /Workspace renamed\./);
    assert.equal(await nameOf(fixture, workspaceId), 'Acme Holdings');

    for (const path of ['', '/members', '/controls', '/integrations', '/audit', '/billing', '/settings']) {
      const shown = await owner.get(`/w/${workspaceId}${path}`);
      assert.equal(shown.status, 200, path);
      assert.match(shown.body, /<h1>Acme Holdings/, path);
      assert.doesNotMatch(shown.body, /<h1>Acme(:|<)/, path);
    }
    assert.match((await owner.get('/workspaces')).body, /Acme Holdings/);

    const db = fixture.runtime.database.db;
    const events = await db
      .selectFrom('audit_events')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('action', '=', 'workspace.renamed')
      .execute();
    assert.equal(events.length, 1);
    assert.equal(events[0]?.actor_label, 'owner@example.com');
    assert.ok(events[0]?.actor_user_id);
    assert.equal(events[0]?.target_label, 'Acme → Acme Holdings');
    const audit = await owner.get(`/w/${workspaceId}/audit`);
    assert.match(audit.body, /Workspace renamed/);

    const sent = await db
      .selectFrom('webhook_events')
      .select('payload')
      .where('workspace_id', '=', workspaceId)
      .where('type', '=', 'workspace.renamed')
      .execute();
    assert.equal(sent.length, 1);
    assert.deepEqual(JSON.parse(sent[0]?.payload ?? '{}').data, {
      previous_name: 'Acme',
      name: 'Acme Holdings',
    });
  });

  it('answers a bad name with the form again (400) and its reason, changing nothing', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture, 'Acme');
    const cases: [string, RegExp][] = [
      ['', /Enter a name for the workspace\./],
      ['   ', /Enter a name for the workspace\./],
      ['x'.repeat(101), /Use at most 100 characters\./],
      ['Acme\nLtd', /Leave out control characters/],
      ['Acme\u0000Ltd', /Leave out control characters/],
      ['\u202eevil', /text-direction control characters/],
      ['<script>alert(1)</script>\u0007', /Leave out control characters/],
    ];
    for (const [name, reason] of cases) {
      await owner.get(`/w/${workspaceId}/settings`);
      const answer = await owner.post(`/w/${workspaceId}/settings/name`, { name });
      assert.equal(answer.status, 400, JSON.stringify(name));
      assert.equal(errorCodeOf(answer.body), 'invalid_name');
      assert.match(answer.body, reason, JSON.stringify(name));
      assert.match(answer.body, /<a href="#name">/);
      assert.doesNotMatch(answer.body, /<script>alert/);
    }
    assert.equal(await nameOf(fixture, workspaceId), 'Acme');
  });

  it('shows admins and members the name read-only and answers 403 to their rename', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture, 'Acme');
    const admin = await invite(fixture, owner, workspaceId, 'admin@example.com', 'admin');
    const member = await invite(fixture, owner, workspaceId, 'member@example.com', 'member');
    for (const client of [admin, member]) {
      const page = await client.get(`/w/${workspaceId}/settings`);
      assert.equal(page.status, 200);
      assert.match(page.body, /Only the workspace’s owners can rename it\./);
      assert.doesNotMatch(page.body, /settings\/name/);
      assert.match(page.body, new RegExp(`href="/w/${workspaceId}/settings" aria-current="page"`));
      const answer = await client.post(`/w/${workspaceId}/settings/name`, { name: 'Taken over' });
      assert.equal(answer.status, 403);
      assert.equal(errorCodeOf(answer.body), 'forbidden');
    }
    assert.equal(await nameOf(fixture, workspaceId), 'Acme');
  });

  it("answers 404 for another workspace's settings, and sends the signed-out to sign in", async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture, 'Acme');
    const other = await fixture.provision({ email: 'someone@example.com', name: 'Other' });
    assert.equal((await owner.get(`/w/${other.workspaceId}/settings`)).status, 404);
    await owner.get(`/w/${workspaceId}/settings`);
    const answer = await owner.post(`/w/${other.workspaceId}/settings/name`, { name: 'Mine now' });
    assert.equal(answer.status, 404);
    assert.equal(await nameOf(fixture, other.workspaceId), 'Other');
    const anonymous = await webClient(fixture.runtime.app).get(`/w/${workspaceId}/settings`);
    assert.equal(anonymous.status, 303);
  });
});
