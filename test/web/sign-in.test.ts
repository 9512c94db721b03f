// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ATTEMPTS_PER_ACCOUNT, ATTEMPTS_PER_CLIENT } from '../../src/accounts/index.ts';
import { MINUTE_MS } from '../../src/shared/clock.ts';
import { sha256Hex } from '../../src/shared/ids.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture, type WebClient, webClient } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

async function signIn(
  client: WebClient,
  email: string,
  password: string,
  headers: Record<string, string> = {},
) {
  await client.get('/sign-in');
  return client.post('/sign-in', { email, password }, headers);
}

/** The error summary of a sign-in page, which is all the page says about a failure. */
function problemOf(body: string): string {
  return /<div class="error-summary"[\s\S]*?<\/div>/.exec(body)?.[0] ?? '';
}

describe(`signing in on ${testDialect}`, () => {
  it('signs in with the right password and out again; the session lives in the database as a hash', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);

    const client = webClient(fixture.runtime.app);
    const answer = await signIn(client, 'ada@example.com', PASSWORD);
    assert.equal(answer.status, 303);
    assert.equal(answer.location, '/w');
    const first = await client.get('/w');
    assert.equal(first.location, `/w/${workspaceId}`, 'the first page is the only workspace at a glance');
    const secret = client.cookies.get('__Host-svc_session');
    assert.ok(secret, 'a Secure __Host- cookie outside local development');
    const cookie = [answer.headers['set-cookie']]
      .flat()
      .find((c) => String(c).startsWith('__Host-svc_session='));
    assert.match(String(cookie), /; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=43200$/);

    const sessions = await fixture.runtime.database.db.selectFrom('sessions').select('token_hash').execute();
    assert.ok(sessions.some((row) => row.token_hash === sha256Hex(secret)));
    assert.ok(sessions.every((row) => row.token_hash !== secret));

    assert.equal((await client.get(`/w/${workspaceId}`)).status, 200);
    const out = await client.post('/sign-out', {});
    assert.equal(out.location, '/');
    const after = webClient(fixture.runtime.app);
    after.cookies.set('__Host-svc_session', secret);
    assert.equal((await after.get(`/w/${workspaceId}`)).status, 303, 'the signed-out session is gone');
  });

  it('uses plain cookies without Secure when the service runs on http://localhost', async (t) => {
    const fixture = await startAppFixture(t, { env: { BASE_URL: 'http://localhost:3000' } });
    const page = await webClient(fixture.runtime.app).get('/sign-in');
    const cookie = String([page.headers['set-cookie']].flat()[0]);
    assert.match(cookie, /^svc_form=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax$/);
  });

  it('answers an unknown address exactly as a wrong password', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);

    const wrongPassword = await signIn(
      webClient(fixture.runtime.app),
      'ada@example.com',
      'not the right one',
    );
    const unknownAddress = await signIn(
      webClient(fixture.runtime.app),
      'nobody@example.com',
      'not the right one',
    );
    assert.equal(wrongPassword.status, 401);
    assert.equal(unknownAddress.status, wrongPassword.status);
    assert.equal(problemOf(unknownAddress.body), problemOf(wrongPassword.body));
    assert.match(problemOf(wrongPassword.body), /The email address or password is not right/);
  });

  it('takes as long for an unknown address as for a wrong password (a dummy hash is verified)', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
    const timings = { known: [] as number[], unknown: [] as number[] };
    for (let round = 0; round < 7; round++) {
      for (const [kind, email] of [
        ['known', 'ada@example.com'],
        ['unknown', `nobody${round}@example.com`],
      ] as const) {
        const client = webClient(fixture.runtime.app);
        await client.get('/sign-in');
        const started = performance.now();
        assert.equal((await client.post('/sign-in', { email, password: `wrong ${round}` })).status, 401);
        timings[kind].push(performance.now() - started);
      }
    }
    // The fastest of each is the work itself, without the noise of a busy machine. Without the
    // dummy hash an unknown address answers in a twentieth of the time.
    const unknown = Math.min(...timings.unknown);
    const known = Math.min(...timings.known);
    assert.ok(
      unknown > known * 0.3,
      `unknown ${unknown.toFixed(1)} ms vs wrong password ${known.toFixed(1)} ms`,
    );
  });

  it('throttles guesses per address, whether or not it has an account, and lets them again after the window', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);

    for (const email of ['ada@example.com', 'nobody@example.com']) {
      const client = webClient(fixture.runtime.app);
      for (let attempt = 1; attempt <= ATTEMPTS_PER_ACCOUNT; attempt++) {
        assert.equal((await signIn(client, email, `wrong guess ${attempt}`)).status, 401);
      }
      const refused = await signIn(client, email, PASSWORD);
      assert.equal(refused.status, 429, email);
      assert.match(problemOf(refused.body), /Too many sign-in attempts. Try again in 15 minutes/);
    }
    fixture.runtime.clock.advance(15 * MINUTE_MS);
    assert.equal((await signIn(webClient(fixture.runtime.app), 'ada@example.com', PASSWORD)).status, 303);
  });

  it('throttles guesses per client address across many accounts', async (t) => {
    const fixture = await startAppFixture(t);
    const client = webClient(fixture.runtime.app);
    for (let attempt = 1; attempt <= ATTEMPTS_PER_CLIENT; attempt++) {
      assert.equal((await signIn(client, `user${attempt}@example.com`, 'a wrong password')).status, 401);
    }
    assert.equal((await signIn(client, 'fresh@example.com', 'a wrong password')).status, 429);
  });

  it('ends a session after 30 idle minutes, and after 12 hours however active', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
    const clock = fixture.runtime.clock;

    clock.advance(29 * MINUTE_MS);
    assert.equal((await client.get(`/w/${workspaceId}`)).status, 200);
    clock.advance(31 * MINUTE_MS);
    const idle = await client.get(`/w/${workspaceId}`);
    assert.equal(idle.status, 303);
    assert.equal(idle.location, `/sign-in?next=${encodeURIComponent(`/w/${workspaceId}`)}`);

    assert.equal((await signIn(client, 'ada@example.com', PASSWORD)).status, 303);
    for (let minutes = 0; minutes < 12 * 60 - 20; minutes += 20) {
      clock.advance(20 * MINUTE_MS);
      assert.equal((await client.get(`/w/${workspaceId}`)).status, 200);
    }
    clock.advance(20 * MINUTE_MS);
    assert.equal((await client.get(`/w/${workspaceId}`)).status, 303, 'the absolute timeout');
  });

  it('sends a signed-in visitor on from the sign-in page, and asks signed-out visitors of app pages to sign in', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
    const page = await client.get('/sign-in?next=/legal/terms');
    assert.equal(page.location, '/legal/terms');
    const anonymous = await webClient(fixture.runtime.app).get('/workspaces');
    assert.equal(anonymous.location, '/sign-in?next=%2Fworkspaces');
  });
});
