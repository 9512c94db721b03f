// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DAY_MS, HOUR_MS } from '../../src/shared/clock.ts';
import {
  type AccountMailFixture,
  EMAIL_CHANGE_LINK,
  isSignedIn,
  PASSWORD,
  problemOf,
  startAccountMailFixture,
} from '../helpers/account-mail.ts';
import { testDialect } from '../helpers/database.ts';
import type { WebClient } from '../helpers/web.ts';

async function passwordSignIn(fixture: AccountMailFixture, email: string, password = PASSWORD) {
  const visitor = fixture.client();
  await visitor.get('/sign-in');
  return (await visitor.post('/sign-in', { email, password })).status;
}

async function askToChangeEmail(client: WebClient, newEmail: string, password = PASSWORD) {
  await client.get('/account');
  return client.post('/account/email', { new_email: newEmail, password });
}

async function addressOf(fixture: AccountMailFixture, userId: string): Promise<string> {
  const row = await fixture.runtime.database.db
    .selectFrom('users')
    .select('email')
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  return row.email;
}

/** Opens the confirmation link (anyone holding it: the new address's mailbox) and confirms. */
async function confirm(fixture: AccountMailFixture, path: string) {
  const visitor = fixture.client();
  await visitor.get('/sign-in');
  const page = await visitor.get(path);
  const answer = await visitor.post(path, {});
  return { page, answer };
}

describe(`changing the email address on ${testDialect}`, () => {
  it('changes it only when confirmed at the new address, once, and tells the old address', async (t) => {
    const fixture = await startAccountMailFixture(t);
    const userId = await fixture.createAccount('ada@example.com');
    const ada = await fixture.signedIn('ada@example.com');

    const wrong = await askToChangeEmail(ada, 'ada@new.example', 'not my password');
    assert.equal(wrong.status, 401);
    assert.match(problemOf(wrong), /Your current password is not right/);
    assert.equal((await fixture.mailTo('ada@new.example')).length, 0);

    const asked = await askToChangeEmail(ada, 'ada@new.example');
    assert.equal(asked.status, 200);
    assert.match(asked.body, /We sent a confirmation link to ada@new.example/);
    assert.equal(await addressOf(fixture, userId), 'ada@example.com', 'nothing changes before confirmation');
    assert.equal(await passwordSignIn(fixture, 'ada@new.example'), 401);

    const path = await fixture.latestLinkPath('ada@new.example', EMAIL_CHANGE_LINK);
    const { page, answer } = await confirm(fixture, path);
    assert.equal(page.status, 200);
    assert.match(page.body, /Your account will sign in with ada@new.example/);
    assert.equal(answer.status, 200);
    assert.match(answer.body, /Your account now signs in with ada@new.example/);
    assert.equal(await addressOf(fixture, userId), 'ada@new.example');
    assert.equal(await passwordSignIn(fixture, 'ada@new.example'), 303);
    assert.equal(await passwordSignIn(fixture, 'ada@example.com'), 401);
    assert.equal(await isSignedIn(ada), true, 'the session that asked stays');

    const notices = await fixture.mailTo('ada@example.com');
    assert.equal(notices.length, 1);
    assert.equal(notices[0]?.subject, 'The email address of your account was changed');
    assert.match(notices[0]?.text ?? '', /was changed to a\*\*\*@new\.example/);
    assert.ok(!notices[0]?.text?.includes('ada@new.example'), 'the old address sees the new one masked');

    const again = await confirm(fixture, path);
    assert.equal(again.page.status, 410);
    assert.equal(again.answer.status, 410);
  });

  it('lets a confirmation link work for 24 hours, not longer', async (t) => {
    const fixture = await startAccountMailFixture(t);
    const userId = await fixture.createAccount('ada@example.com');
    const ada = await fixture.signedIn('ada@example.com');
    assert.equal((await askToChangeEmail(ada, 'ada@new.example')).status, 200);
    const path = await fixture.latestLinkPath('ada@new.example', EMAIL_CHANGE_LINK);
    fixture.runtime.clock.advance(DAY_MS - HOUR_MS);
    assert.equal((await fixture.client().get(path)).status, 200);
    fixture.runtime.clock.advance(HOUR_MS);
    const late = await confirm(fixture, path);
    assert.equal(late.page.status, 410);
    assert.equal(late.answer.status, 410);
    assert.equal(await addressOf(fixture, userId), 'ada@example.com');
  });

  it('refuses an address another account has, telling only the signed-in holder', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    await fixture.createAccount('bob@example.com');
    const ada = await fixture.signedIn('ada@example.com');
    const taken = await askToChangeEmail(ada, 'BOB@example.com');
    assert.equal(taken.status, 409);
    assert.match(problemOf(taken), /That address is not available/);
    const own = await askToChangeEmail(ada, 'Ada@Example.com');
    assert.equal(own.status, 400);
    assert.equal((await fixture.mailTo('bob@example.com')).length, 0, 'no email to the taken address');

    const anonymous = fixture.client();
    await anonymous.get('/sign-in');
    const refused = await anonymous.post('/account/email', {
      new_email: 'bob@example.com',
      password: PASSWORD,
    });
    assert.equal(refused.status, 303);
    assert.equal(refused.location, '/sign-in?next=%2Fw');
  });

  it('gives an address to one account only when two confirm it at once', async (t) => {
    const fixture = await startAccountMailFixture(t);
    const ids = [
      await fixture.createAccount('ada@example.com'),
      await fixture.createAccount('bob@example.com'),
    ];
    const paths: string[] = [];
    for (const email of ['ada@example.com', 'bob@example.com']) {
      assert.equal((await askToChangeEmail(await fixture.signedIn(email), 'shared@example.com')).status, 200);
      paths.push(await fixture.latestLinkPath('shared@example.com', EMAIL_CHANGE_LINK));
    }
    const visitors = paths.map(() => fixture.client());
    for (const [index, visitor] of visitors.entries()) await visitor.get(paths[index] ?? '');
    const answers = await Promise.all(visitors.map((visitor, index) => visitor.post(paths[index] ?? '', {})));
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 409]);
    assert.match(answers.find((answer) => answer.status === 409)?.body ?? '', /not available any more/);
    const addresses = await Promise.all(ids.map((id) => addressOf(fixture, id)));
    assert.equal(addresses.filter((address) => address === 'shared@example.com').length, 1);
    assert.equal(
      (await fixture.mailTo('ada@example.com')).length + (await fixture.mailTo('bob@example.com')).length,
      1,
    );
  });

  it('throttles confirmation emails to one new address', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const ada = await fixture.signedIn('ada@example.com');
    for (let request = 1; request <= 3; request++) {
      assert.equal((await askToChangeEmail(ada, 'ada@new.example')).status, 200);
    }
    const refused = await askToChangeEmail(ada, 'ada@new.example');
    assert.equal(refused.status, 429);
    assert.match(problemOf(refused), /Too many attempts/);
  });
});

describe(`changing the password on ${testDialect}`, () => {
  it('needs the current password, ends every other session and renews this one', async (t) => {
    const fixture = await startAccountMailFixture(t);
    await fixture.createAccount('ada@example.com');
    const ada = await fixture.signedIn('ada@example.com');
    const elsewhere = await fixture.signedIn('ada@example.com');
    const before = ada.cookies.get('svc_session');

    await ada.get('/account');
    const wrong = await ada.post('/account/password', {
      current_password: 'not my password',
      new_password: 'a brand new passphrase',
    });
    assert.equal(wrong.status, 401);
    const weak = await ada.post('/account/password', { current_password: PASSWORD, new_password: 'short' });
    assert.equal(weak.status, 400);
    assert.match(problemOf(weak), /Use at least 12 characters/);

    const changed = await ada.post('/account/password', {
      current_password: PASSWORD,
      new_password: 'a brand new passphrase',
    });
    assert.equal(changed.status, 303);
    assert.equal(changed.location, '/account?done=password');
    assert.notEqual(ada.cookies.get('svc_session'), before, 'a new session id');
    assert.match((await ada.get('/account?done=password')).body, /Your password was changed/);
    assert.equal(await isSignedIn(elsewhere), false);
    assert.equal(await passwordSignIn(fixture, 'ada@example.com'), 401);
    assert.equal(await passwordSignIn(fixture, 'ada@example.com', 'a brand new passphrase'), 303);

    const notices = await fixture.mailTo('ada@example.com');
    assert.deepEqual(
      notices.map((mail) => mail.subject),
      ['The password of your account was changed'],
      'one notice, for the change that was made',
    );
    assert.match(notices[0]?.text ?? '', /changed on its Account page on March 1, 2026 at 12:00 PM \(UTC\)/);
    assert.match(notices[0]?.text ?? '', /If you did not make this change/);
    assert.doesNotMatch(notices[0]?.text ?? '', /passphrase/);
  });
});
