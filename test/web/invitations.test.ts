// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DAY_MS } from '../../src/shared/clock.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture, webClient } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

async function count(
  fixture: Awaited<ReturnType<typeof startAppFixture>>,
  table: 'users' | 'workspace_members',
) {
  const row = await fixture.runtime.database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe(`invitation pages on ${testDialect}`, () => {
  it('names the workspace, its plan and term, and the address the invitation went to', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com', name: 'Acme Ltd' });
    const page = await webClient(fixture.runtime.app).get(invitationPath);
    assert.equal(page.status, 200);
    assert.match(page.body, /<dd>Acme Ltd<\/dd>/);
    assert.match(page.body, /<dd>Pro<\/dd>/);
    assert.match(
      page.body,
      /Prepaid until <time datetime="2027-03-01T12:00:00.000Z">1 Mar 2027, 12:00 UTC<\/time>/,
    );
    assert.match(page.body, /<dd>ada@example.com<\/dd>/);
    assert.match(page.body, /autocomplete="new-password"/);
  });

  it('creates the account on accepting, signs it in and lands in the workspace; the link then says it was used', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'Ada@Example.com' });
    const client = webClient(fixture.runtime.app);
    await client.get(invitationPath);
    const accepted = await client.post(`${invitationPath}/accept`, { password: PASSWORD });
    assert.equal(accepted.status, 303);
    assert.equal(accepted.location, `/w/${workspaceId}`);
    const workspace = await client.get(`/w/${workspaceId}`);
    assert.equal(workspace.status, 200);
    assert.match(workspace.body, /Signed in as <strong>Ada@Example.com<\/strong>/);
    assert.match(workspace.body, /You are the workspace&#39;s owner|You are the workspace's owner/);

    const again = await webClient(fixture.runtime.app).get(invitationPath);
    assert.match(again.body, /This invitation has already been used/);
    const repeat = await client.post(`${invitationPath}/accept`, { password: PASSWORD });
    assert.equal(repeat.status, 409);
    assert.equal(await count(fixture, 'users'), 1);
    assert.equal(await count(fixture, 'workspace_members'), 1);

    const other = webClient(fixture.runtime.app);
    await other.get('/sign-in');
    const signedIn = await other.post('/sign-in', { email: 'ada@EXAMPLE.com', password: PASSWORD });
    assert.equal(signedIn.status, 303, 'the address is matched without regard to case');
  });

  it('lets exactly one of two concurrent accepts of one link succeed', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'race@example.com' });
    const first = webClient(fixture.runtime.app);
    const second = webClient(fixture.runtime.app);
    await first.get(invitationPath);
    await second.get(invitationPath);
    const answers = await Promise.all([
      first.post(`${invitationPath}/accept`, { password: PASSWORD }),
      second.post(`${invitationPath}/accept`, { password: 'another long passphrase' }),
    ]);
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [303, 409]);
    assert.equal(await count(fixture, 'users'), 1);
    assert.equal(await count(fixture, 'workspace_members'), 1);
  });

  it('attaches a second workspace to the existing account of the address, after its password', async (t) => {
    const fixture = await startAppFixture(t);
    const firstInvite = await fixture.provision({ email: 'ada@example.com', name: 'First' });
    await acceptAsNewAccount(fixture.runtime.app, firstInvite.invitationPath, PASSWORD);
    const second = await fixture.provision({ email: 'ada@example.com', name: 'Second' });

    const client = webClient(fixture.runtime.app);
    const page = await client.get(second.invitationPath);
    assert.match(page.body, /You already have an account with <strong>ada@example.com<\/strong>/);
    assert.match(page.body, /autocomplete="current-password"/);
    const wrong = await client.post(`${second.invitationPath}/accept`, {
      password: 'not the password at all',
    });
    assert.equal(wrong.status, 401);
    assert.match(wrong.body, /That password is not right/);
    const right = await client.post(`${second.invitationPath}/accept`, { password: PASSWORD });
    assert.equal(right.status, 303);
    const list = await client.get('/workspaces');
    assert.match(list.body, /First/);
    assert.match(list.body, /Second/);
    assert.equal((await client.get('/w')).location, '/workspaces', 'with two, the first page is the list');
    assert.equal(await count(fixture, 'users'), 1);
  });

  it('tells a visitor signed in under another address so, offers to sign out, and refuses to accept', async (t) => {
    const fixture = await startAppFixture(t);
    const mine = await fixture.provision({ email: 'bob@example.com' });
    const client = await acceptAsNewAccount(fixture.runtime.app, mine.invitationPath);
    const theirs = await fixture.provision({ email: 'carol@example.com' });

    const page = await client.get(theirs.invitationPath);
    assert.match(
      page.body,
      /You are signed in as <strong>bob@example.com<\/strong>, but this invitation is for <strong>carol@example.com<\/strong>/,
    );
    assert.match(page.body, /Sign out and continue/);
    const refused = await client.post(`${theirs.invitationPath}/accept`, {});
    assert.equal(refused.status, 403);

    const signedOut = await client.post('/sign-out', { next: theirs.invitationPath });
    assert.equal(signedOut.location, theirs.invitationPath);
    const fresh = await client.get(theirs.invitationPath);
    assert.match(fresh.body, /Choose a password for your account/);
  });

  it('says an expired link expired and sends a fresh one to the same address; the old link then says it was replaced', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'late@example.com', name: 'Late Ltd' });
    fixture.runtime.clock.advance(7 * DAY_MS);
    const client = webClient(fixture.runtime.app);
    const expired = await client.get(invitationPath);
    assert.match(expired.body, /This invitation has expired/);
    assert.equal((await client.post(`${invitationPath}/accept`, { password: PASSWORD })).status, 409);

    const resent = await client.post(`${invitationPath}/resend`, {});
    assert.equal(resent.status, 200);
    assert.match(resent.body, /We sent a new invitation link to late@example.com/);
    const freshPath = await fixture.latestInvitationPath('late@example.com');
    assert.notEqual(freshPath, invitationPath);
    assert.match((await client.get(invitationPath)).body, /This invitation link was replaced/);
    assert.match((await client.get(freshPath)).body, /<dd>Late Ltd<\/dd>/);

    assert.equal((await client.post(`${invitationPath}/resend`, {})).status, 200);
    assert.equal((await client.post(`${invitationPath}/resend`, {})).status, 200);
    const limited = await client.post(`${invitationPath}/resend`, {});
    assert.equal(limited.status, 429);
    assert.match(limited.body, /Several invitations were sent to this address recently/);
    await fixture.runtime.jobs.drain();
    assert.equal(
      fixture.sent.filter((mail) => mail.to === 'late@example.com').length,
      4,
      'the first and three fresh ones',
    );
  });

  it('offers nothing more on a used link: no fresh invitation, which would hold a seat or offer back a role since taken away', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await acceptAsNewAccount(fixture.runtime.app, invitationPath);
    const visitor = webClient(fixture.runtime.app);
    const used = await visitor.get(invitationPath);
    assert.match(used.body, /This invitation has already been used/);
    assert.doesNotMatch(used.body, /Send a fresh invitation/);
    await visitor.get('/sign-in'); // a page with a form, for the CSRF token a hand-made request needs
    const refused = await visitor.post(`${invitationPath}/resend`, {});
    assert.equal(refused.status, 409);
    assert.match(refused.body, /This invitation was used, so it is not sent again/);
    assert.equal(await fixture.latestInvitationPath('ada@example.com'), invitationPath, 'no new invitation');
  });

  it('answers an unknown or malformed link with the 404 page', async (t) => {
    const fixture = await startAppFixture(t);
    const client = webClient(fixture.runtime.app);
    for (const path of [`/invitations/inv_${'A'.repeat(43)}`, '/invitations/nope']) {
      const page = await client.get(path);
      assert.equal(page.status, 404);
      assert.match(page.body, /Page not found/);
    }
  });

  it('refuses a short password and creates nothing', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'short@example.com' });
    const client = webClient(fixture.runtime.app);
    await client.get(invitationPath);
    const refused = await client.post(`${invitationPath}/accept`, { password: 'short' });
    assert.equal(refused.status, 400);
    assert.match(refused.body, /Use at least 12 characters/);
    assert.equal(await count(fixture, 'users'), 0);
    assert.match((await client.get(invitationPath)).body, /Choose a password/);
  });
});
