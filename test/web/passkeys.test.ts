// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ATTEMPTS_PER_ACCOUNT, PASSKEY_CHALLENGE_TTL_MS } from '../../src/accounts/index.ts';
import { MINUTE_MS } from '../../src/shared/clock.ts';
import { testDialect } from '../helpers/database.ts';
import { SoftAuthenticator } from '../helpers/soft-authenticator.ts';
import {
  type AppFixture,
  acceptAsNewAccount,
  startAppFixture,
  type WebClient,
  webClient,
} from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
/** The test runtime's BASE_URL: the only origin passkeys may be used from, and its host the RP ID. */
const ORIGIN = 'http://svc.test';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** A signed-in owner of a new workspace, with a passkey registered through the pages. */
async function ownerWithPasskey(fixture: AppFixture, email = 'ada@example.com') {
  const { invitationPath } = await fixture.provision({ email });
  const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  const authenticator = new SoftAuthenticator();
  await client.get('/account/passkeys');
  const options = JSON.parse((await client.post('/account/passkeys/options', {})).body);
  const added = await client.post('/account/passkeys', {
    name: 'Laptop',
    response: authenticator.register(options, ORIGIN),
  });
  assert.equal(added.status, 303, added.body);
  return { client, authenticator };
}

/** A browser on the sign-in page, holding the challenge the service issued to it. */
async function signInOptions(client: WebClient): Promise<{ challenge: string; rpId?: string }> {
  await client.get('/sign-in');
  const answer = await client.post('/sign-in/passkey/options', {});
  assert.equal(answer.status, 200);
  assert.match(String(answer.headers['content-type']), /^application\/json/);
  return JSON.parse(answer.body);
}

function sessionCookieOf(client: WebClient): string | undefined {
  return client.cookies.get('__Host-svc_session');
}

describe(`passkeys over HTTP on ${testDialect}`, () => {
  it('registers a passkey and signs in with it; the challenge works only once', async (t) => {
    const fixture = await startAppFixture(t);
    const { client, authenticator } = await ownerWithPasskey(fixture);
    const page = await client.get('/account/passkeys');
    assert.match(page.body, /<td role="cell" data-label="Name">Laptop<\/td>/);

    const browser = webClient(fixture.runtime.app);
    const options = await signInOptions(browser);
    assert.equal(options.rpId, 'svc.test');
    const assertion = authenticator.assert(options, ORIGIN);
    const signedIn = await browser.post('/sign-in/passkey', {
      response: assertion,
      next: '/account/passkeys',
    });
    assert.equal(signedIn.status, 303, signedIn.body);
    assert.equal(signedIn.location, '/account/passkeys');
    const session = sessionCookieOf(browser);
    assert.ok(session);
    assert.match((await browser.get('/account/passkeys')).body, /Signed in as <strong>ada@example\.com/);

    const replayed = await browser.post('/sign-in/passkey', { response: assertion });
    assert.equal(replayed.status, 400);
    assert.equal(errorCodeOf(replayed.body), 'passkey_challenge_invalid');
    const elsewhere = webClient(fixture.runtime.app);
    await elsewhere.get('/sign-in');
    const replayedElsewhere = await elsewhere.post('/sign-in/passkey', { response: assertion });
    assert.equal(replayedElsewhere.status, 400);
    assert.equal(sessionCookieOf(elsewhere), undefined);

    const challenges = await fixture.runtime.database.db
      .selectFrom('passkey_challenges')
      .selectAll()
      .execute();
    assert.deepEqual(challenges, [], 'used challenges are gone');
  });

  it('offers no passkeys where browsers make none (BASE_URL at an IP address) and says why', async (t) => {
    const fixture = await startAppFixture(t, { env: { BASE_URL: 'http://127.0.0.1:3000' } });
    const client = webClient(fixture.runtime.app, 'http://127.0.0.1:3000');
    assert.doesNotMatch((await client.get('/sign-in')).body, /sign in with a passkey/);
    const { invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await client.get(invitationPath);
    assert.equal((await client.post(`${invitationPath}/accept`, { password: PASSWORD })).status, 303);
    const page = await client.get('/account/passkeys');
    assert.equal(page.status, 200);
    assert.match(
      page.body,
      /Passkeys need the service at a domain name, and this one is at the address <strong>127\.0\.0\.1<\/strong>/,
    );
    assert.doesNotMatch(page.body, /data-passkey="register"/);

    const named = await startAppFixture(t);
    assert.match((await webClient(named.runtime.app).get('/sign-in')).body, /sign in with a passkey/);
  });

  it('refuses a challenge that expired, or that was issued to another browser', async (t) => {
    const fixture = await startAppFixture(t);
    const { client, authenticator } = await ownerWithPasskey(fixture);

    const browser = webClient(fixture.runtime.app);
    const late = await signInOptions(browser);
    fixture.runtime.clock.advance(PASSKEY_CHALLENGE_TTL_MS);
    const expired = await browser.post('/sign-in/passkey', { response: authenticator.assert(late, ORIGIN) });
    assert.equal(expired.status, 400);
    assert.equal(errorCodeOf(expired.body), 'passkey_challenge_invalid');
    assert.equal(sessionCookieOf(browser), undefined);

    const issuedToVictim = await signInOptions(webClient(fixture.runtime.app));
    const attacker = webClient(fixture.runtime.app);
    await attacker.get('/sign-in');
    const stolen = await attacker.post('/sign-in/passkey', {
      response: authenticator.assert(issuedToVictim, ORIGIN),
    });
    assert.equal(stolen.status, 400);
    assert.equal(errorCodeOf(stolen.body), 'passkey_challenge_invalid');

    await client.get('/account/passkeys');
    const registration = JSON.parse((await client.post('/account/passkeys/options', {})).body);
    fixture.runtime.clock.advance(PASSKEY_CHALLENGE_TTL_MS + 1);
    const lateKey = await client.post('/account/passkeys', {
      name: 'Late',
      response: new SoftAuthenticator().register(registration, ORIGIN),
    });
    assert.equal(lateKey.status, 400);
    assert.equal(errorCodeOf(lateKey.body), 'passkey_challenge_invalid');
    assert.doesNotMatch(lateKey.body, />Late<\/td>/);
  });

  it('refuses a passkey used on another origin or for another RP ID, and burns the challenge', async (t) => {
    const fixture = await startAppFixture(t);
    const { client, authenticator } = await ownerWithPasskey(fixture);

    const browser = webClient(fixture.runtime.app);
    const options = await signInOptions(browser);
    const phished = await browser.post('/sign-in/passkey', {
      response: authenticator.assert(options, 'https://svc.test.evil.example'),
    });
    assert.equal(phished.status, 401);
    assert.equal(errorCodeOf(phished.body), 'passkey_not_verified');
    assert.equal(sessionCookieOf(browser), undefined);
    const retried = await browser.post('/sign-in/passkey', {
      response: authenticator.assert(options, ORIGIN),
    });
    assert.equal(errorCodeOf(retried.body), 'passkey_challenge_invalid', 'the challenge was used up');

    const otherRp = await signInOptions(browser);
    const wrongRp = await browser.post('/sign-in/passkey', {
      response: authenticator.assert(otherRp, ORIGIN, { rpId: 'evil.example' }),
    });
    assert.equal(errorCodeOf(wrongRp.body), 'passkey_not_verified');

    await client.get('/account/passkeys');
    const registration = JSON.parse((await client.post('/account/passkeys/options', {})).body);
    const foreign = await client.post('/account/passkeys', {
      name: 'Foreign',
      response: new SoftAuthenticator().register(registration, 'https://evil.example'),
    });
    assert.equal(foreign.status, 401);
    assert.equal(errorCodeOf(foreign.body), 'passkey_not_verified');
    const stored = await fixture.runtime.database.db.selectFrom('passkeys').select('name').execute();
    assert.deepEqual(
      stored.map((row) => row.name),
      ['Laptop'],
    );
  });

  it('refuses a signature counter that does not grow (a cloned authenticator) and an unknown passkey', async (t) => {
    const fixture = await startAppFixture(t);
    const { authenticator } = await ownerWithPasskey(fixture);
    const browser = webClient(fixture.runtime.app);
    const first = await browser.post('/sign-in/passkey', {
      response: authenticator.assert(await signInOptions(browser), ORIGIN, { counter: 5 }),
    });
    assert.equal(first.status, 303);

    const clone = webClient(fixture.runtime.app);
    const cloned = await clone.post('/sign-in/passkey', {
      response: authenticator.assert(await signInOptions(clone), ORIGIN, { counter: 5 }),
    });
    assert.equal(cloned.status, 401);
    assert.equal(errorCodeOf(cloned.body), 'passkey_not_verified');

    const stranger = webClient(fixture.runtime.app);
    const unknown = await stranger.post('/sign-in/passkey', {
      response: new SoftAuthenticator().assert(await signInOptions(stranger), ORIGIN),
    });
    assert.equal(unknown.status, 401);
    assert.equal(errorCodeOf(unknown.body), 'passkey_unknown');
  });

  it('throttles failed passkey sign-ins for the account', async (t) => {
    const fixture = await startAppFixture(t);
    const { authenticator } = await ownerWithPasskey(fixture);
    const browser = webClient(fixture.runtime.app);
    for (let attempt = 0; attempt < ATTEMPTS_PER_ACCOUNT; attempt++) {
      const failed = await browser.post('/sign-in/passkey', {
        response: authenticator.assert(await signInOptions(browser), 'https://evil.example'),
      });
      assert.equal(failed.status, 401);
    }
    const throttled = await browser.post('/sign-in/passkey', {
      response: authenticator.assert(await signInOptions(browser), ORIGIN),
    });
    assert.equal(throttled.status, 429);
    assert.equal(sessionCookieOf(browser), undefined);
  });

  it('says a passkey needs JavaScript when the form arrives without one, and refuses malformed answers', async (t) => {
    const fixture = await startAppFixture(t);
    const browser = webClient(fixture.runtime.app);
    const page = await browser.get('/sign-in');
    assert.match(page.body, /<noscript><p>Signing in with a passkey needs JavaScript/);
    assert.match(page.body, /<form method="post" action="\/sign-in\/passkey"[^>]* hidden>/);
    const answer = await browser.post('/sign-in/passkey', { response: '' });
    assert.equal(answer.status, 400);
    assert.equal(errorCodeOf(answer.body), 'passkey_response_missing');
    const clientDataJSON = Buffer.from(JSON.stringify({ challenge: 'x' })).toString('base64url');
    for (const response of [
      '{"id": 1',
      'null',
      '[]',
      JSON.stringify({ id: 'a\u0000b', type: 'public-key', response: { clientDataJSON } }),
      JSON.stringify({ id: 'abc', type: 'public-key', response: { clientDataJSON: '%%%' } }),
      JSON.stringify({ id: 'abc', type: 'public-key', response: { clientDataJSON: 5 } }),
    ]) {
      const garbage = await browser.post('/sign-in/passkey', { response });
      assert.equal(garbage.status, 400, response);
      assert.equal(errorCodeOf(garbage.body), 'passkey_response_invalid');
    }
    const unknownChallenge = await browser.post('/sign-in/passkey', {
      response: JSON.stringify({ id: 'abc', type: 'public-key', response: { clientDataJSON } }),
    });
    assert.equal(errorCodeOf(unknownChallenge.body), 'passkey_challenge_invalid');
  });

  it('removes a passkey at once just after signing in, later only with the password, never another account’s', async (t) => {
    const fixture = await startAppFixture(t);
    const { client, authenticator } = await ownerWithPasskey(fixture);
    const [passkey] = await fixture.runtime.database.db.selectFrom('passkeys').select('id').execute();
    assert.ok(passkey);
    const removePath = `/account/passkeys/${passkey.id}/remove`;

    const other = await ownerWithPasskey(fixture, 'bob@example.com');
    assert.equal((await other.client.get(removePath)).status, 404);
    assert.equal((await other.client.post(removePath, {})).status, 404);

    fixture.runtime.clock.advance(11 * MINUTE_MS);
    const confirm = await client.get(removePath);
    assert.match(confirm.body, /<label for="password">Your password<\/label>/);
    const withoutPassword = await client.post(removePath, {});
    assert.equal(withoutPassword.status, 401);
    assert.equal(errorCodeOf(withoutPassword.body), 'password_required');
    const wrongPassword = await client.post(removePath, { password: 'not my password' });
    assert.equal(wrongPassword.status, 401);
    const crossSite = await client.post(
      removePath,
      { password: PASSWORD },
      { origin: 'https://evil.example' },
    );
    assert.equal(crossSite.status, 403);
    assert.equal(
      (await fixture.runtime.database.db.selectFrom('passkeys').select('id').execute()).length,
      2,
      'nothing removed yet',
    );
    const removed = await client.post(removePath, { password: PASSWORD });
    assert.equal(removed.status, 303);
    assert.doesNotMatch((await client.get('/account/passkeys')).body, />Laptop<\/td>/);

    const browser = webClient(fixture.runtime.app);
    const refused = await browser.post('/sign-in/passkey', {
      response: authenticator.assert(await signInOptions(browser), ORIGIN),
    });
    assert.equal(errorCodeOf(refused.body), 'passkey_unknown', 'a removed passkey no longer signs in');

    const fresh = await ownerWithPasskey(fixture, 'cy@example.com');
    const [freshKey] = await fixture.runtime.database.db
      .selectFrom('passkeys')
      .innerJoin('users', 'users.id', 'passkeys.user_id')
      .select('passkeys.id')
      .where('users.email', '=', 'cy@example.com')
      .execute();
    assert.ok(freshKey);
    const freshPath = `/account/passkeys/${freshKey.id}/remove`;
    assert.doesNotMatch((await fresh.client.get(freshPath)).body, /Your password/);
    assert.equal((await fresh.client.post(freshPath, {})).status, 303, 'a recent sign-in needs no password');
  });
});
