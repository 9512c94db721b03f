// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EMAILS_PER_ADDRESS, EMAILS_PER_CLIENT } from '../../src/accounts/index.ts';
import { MINUTE_MS } from '../../src/shared/clock.ts';
import { sha256Hex } from '../../src/shared/ids.ts';
import {
  type AccountMailFixture,
  isSignedIn,
  PASSWORD,
  problemOf,
  RESET_LINK,
  SIGN_IN_LINK,
  startAccountMailFixture,
} from '../helpers/account-mail.ts';
import { testDialect } from '../helpers/database.ts';
import type { WebClient } from '../helpers/web.ts';

const SESSION_COOKIE = 'svc_session';

async function askFor(fixture: AccountMailFixture, path: string, email: string, client?: WebClient) {
  const visitor = client ?? fixture.client();
  await visitor.get(path);
  return visitor.post(path, { email });
}

async function signInLinkFor(fixture: AccountMailFixture, email: string): Promise<string> {
  assert.equal((await askFor(fixture, '/sign-in/email', email)).status, 200);
  return fixture.latestLinkPath(email, SIGN_IN_LINK);
}

async function resetLinkFor(fixture: AccountMailFixture, email: string): Promise<string> {
  assert.equal((await askFor(fixture, '/password-reset', email)).status, 200);
  return fixture.latestLinkPath(email, RESET_LINK);
}

/** Opens a link and presses its button, as a person in a browser does. */
async function useLink(fixture: AccountMailFixture, path: string, form: Record<string, string> = {}) {
  const visitor = fixture.client();
  await visitor.get('/sign-in');
  const page = await visitor.get(path);
  const answer = await visitor.post(path, form);
  return { visitor, page, answer };
}

async function passwordSignIn(fixture: AccountMailFixture, email: string, password: string) {
  const visitor = fixture.client();
  await visitor.get('/sign-in');
  return (await visitor.post('/sign-in', { email, password })).status;
}

describe(`a sign-in link by email on ${testDialect}`, () => {
  it('signs in once, with a fresh session, from a link stored only as a hash; opening it uses nothing', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const visitor = fixture.client();
    assert.match((await visitor.get('/sign-in')).body, /href="\/sign-in\/email"/);
    const asked = await askFor(fixture, '/sign-in/email', 'ada@example.com', visitor);
    assert.equal(asked.status, 200);
    assert.match(asked.body, /If an account exists for that address, we have sent it a link to sign in/);

    const path = await fixture.latestLinkPath('ada@example.com', SIGN_IN_LINK);
    const secret = path.split('/').at(-1) ?? '';
    const rows = await fixture.runtime.database.db.selectFrom('account_links').selectAll().execute();
    assert.deepEqual(
      rows.map((row) => row.token_hash),
      [sha256Hex(secret)],
    );
    assert.ok(!JSON.stringify(rows).includes(secret), 'the secret itself is not stored');

    // A mail scanner fetching the link twice does not use it up.
    const planted = `ses_${'A'.repeat(43)}`;
    visitor.cookies.set(SESSION_COOKIE, planted);
    assert.equal((await visitor.get(path)).status, 200);
    const page = await visitor.get(path);
    assert.equal(page.status, 200);
    assert.match(page.body, /<button type="submit" class="button">Sign in<\/button>/);

    const answer = await visitor.post(path, {});
    assert.equal(answer.status, 303);
    assert.equal(answer.location, '/w');
    const session = visitor.cookies.get(SESSION_COOKIE);
    assert.ok(session && session !== planted, 'a new session id');
    assert.equal(await isSignedIn(visitor), true);

    const again = await useLink(fixture, path);
    assert.equal(again.page.status, 410);
    assert.equal(again.answer.status, 410);
    assert.match(again.answer.body, /<meta name="error-code" content="link_invalid">/);
    assert.equal(again.visitor.cookies.get(SESSION_COOKIE), undefined);
  });

  it('stops working 15 minutes after it was sent', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const fresh = await signInLinkFor(fixture, 'ada@example.com');
    fixture.runtime.clock.advance(14 * MINUTE_MS);
    assert.equal((await fixture.client().get(fresh)).status, 200, 'still valid after 14 minutes');

    const path = await signInLinkFor(fixture, 'ada@example.com');
    fixture.runtime.clock.advance(15 * MINUTE_MS);
    const late = await useLink(fixture, path);
    assert.equal(late.page.status, 410);
    assert.equal(late.answer.status, 410);
    assert.equal(await isSignedIn(late.visitor), false);
  });

  it('works only in its newest copy: asking again replaces the earlier link', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const first = await signInLinkFor(fixture, 'ada@example.com');
    const second = await signInLinkFor(fixture, 'ada@example.com');
    assert.equal((await useLink(fixture, first)).answer.status, 410);
    assert.equal((await useLink(fixture, second)).answer.status, 303);
  });

  it('signs in exactly one of two concurrent uses of one link', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const path = await signInLinkFor(fixture, 'ada@example.com');
    const visitors = [fixture.client(), fixture.client()];
    for (const visitor of visitors) await visitor.get(path);
    const answers = await Promise.all(visitors.map((visitor) => visitor.post(path, {})));
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [303, 410]);
    const sessions = await fixture.runtime.database.db.selectFrom('sessions').select('id').execute();
    assert.equal(sessions.length, 1);
  });

  it('answers an unknown address exactly as a known one, and emails only the account', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    for (const path of ['/sign-in/email', '/password-reset']) {
      const known = await askFor(fixture, path, 'ada@example.com');
      const unknown = await askFor(fixture, path, 'nobody@example.com');
      assert.equal(known.status, 200);
      assert.equal(unknown.status, known.status);
      assert.equal(unknown.body, known.body, path);
    }
    assert.equal((await fixture.mailTo('ada@example.com')).length, 2);
    assert.equal((await fixture.mailTo('nobody@example.com')).length, 0);
    assert.equal(fixture.smtp.received.length, 2);
  });

  it('throttles the emails asked for per address, known or not, and per client', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    for (const email of ['ada@example.com', 'nobody@example.com']) {
      for (let request = 1; request <= EMAILS_PER_ADDRESS; request++) {
        const path = request % 2 ? '/sign-in/email' : '/password-reset';
        assert.equal((await askFor(fixture, path, email)).status, 200);
      }
      const refused = await askFor(fixture, '/sign-in/email', email);
      assert.equal(refused.status, 429, email);
      assert.match(problemOf(refused), /Try again in 15 minutes/);
    }
    assert.equal((await fixture.mailTo('ada@example.com')).length, EMAILS_PER_ADDRESS);

    fixture.runtime.clock.advance(15 * MINUTE_MS);
    for (let request = 1; request <= EMAILS_PER_CLIENT; request++) {
      assert.equal((await askFor(fixture, '/sign-in/email', `user${request}@example.com`)).status, 200);
    }
    assert.equal((await askFor(fixture, '/password-reset', 'ada@example.com')).status, 429);
    fixture.runtime.clock.advance(15 * MINUTE_MS);
    assert.equal((await askFor(fixture, '/password-reset', 'ada@example.com')).status, 200);
  });

  it('asks again for an address that is not one', async (t) => {
    const fixture = await startAccountMailFixture(t);
    const answer = await askFor(fixture, '/sign-in/email', 'not an address');
    assert.equal(answer.status, 400);
    assert.match(problemOf(answer), /Enter an email address/);
  });
});

describe(`a password reset by email on ${testDialect}`, () => {
  it('sets a new password once, ends every other session and signs in with a new one', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const elsewhere = await fixture.signedIn('ada@example.com');
    const path = await resetLinkFor(fixture, 'ada@example.com');

    const visitor = fixture.client();
    const form = await visitor.get(path);
    assert.equal(form.status, 200);
    assert.match(form.body, /<label for="password">New password<\/label>/);
    const weak = await visitor.post(path, { password: 'short' });
    assert.equal(weak.status, 400);
    assert.match(problemOf(weak), /Use at least 12 characters/);

    const reset = await visitor.post(path, { password: 'a brand new passphrase' });
    assert.equal(reset.status, 303);
    assert.equal(reset.location, '/account?done=password');
    assert.match((await visitor.get(reset.location ?? '')).body, /Your password was changed/);
    assert.equal(await isSignedIn(visitor), true);
    assert.equal(await isSignedIn(elsewhere), false, 'the other session ended');
    assert.equal(await passwordSignIn(fixture, 'ada@example.com', PASSWORD), 401);
    assert.equal(await passwordSignIn(fixture, 'ada@example.com', 'a brand new passphrase'), 303);
    const notices = (await fixture.mailTo('ada@example.com')).filter(
      (mail) => mail.subject === 'The password of your account was changed',
    );
    assert.equal(notices.length, 1);
    assert.match(notices[0]?.text ?? '', /changed with a reset link sent to this address/);

    const again = await useLink(fixture, path, { password: 'yet another passphrase' });
    assert.equal(again.page.status, 410);
    assert.equal(again.answer.status, 410);
    assert.equal(await passwordSignIn(fixture, 'ada@example.com', 'yet another passphrase'), 401);
  });

  it('stops working an hour after it was sent', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const path = await resetLinkFor(fixture, 'ada@example.com');
    fixture.runtime.clock.advance(59 * MINUTE_MS);
    assert.equal((await fixture.client().get(path)).status, 200);
    fixture.runtime.clock.advance(MINUTE_MS);
    const late = await useLink(fixture, path, { password: 'a brand new passphrase' });
    assert.equal(late.page.status, 410);
    assert.equal(late.answer.status, 410);
    assert.equal(await passwordSignIn(fixture, 'ada@example.com', PASSWORD), 303);
  });

  it('lets exactly one of two concurrent uses of one link set the password', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const path = await resetLinkFor(fixture, 'ada@example.com');
    const visitors = [fixture.client(), fixture.client()];
    for (const visitor of visitors) await visitor.get(path);
    const answers = await Promise.all(
      visitors.map((visitor, index) => visitor.post(path, { password: `new passphrase number ${index}` })),
    );
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [303, 410]);
    const winner = answers.findIndex((answer) => answer.status === 303);
    assert.equal(await passwordSignIn(fixture, 'ada@example.com', `new passphrase number ${winner}`), 303);
    assert.equal(
      await passwordSignIn(fixture, 'ada@example.com', `new passphrase number ${1 - winner}`),
      401,
    );
  });
});
