// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Challenge, Credential } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { findSellableItem } from '../../src/catalog/index.ts';
import {
  challengeId,
  formatChallenge,
  issueChallenge,
  paidRouteFor,
} from '../../src/channels/mpp/challenge.ts';
import { testDialect } from '../helpers/database.ts';
import {
  BUYER,
  challengeParams,
  encodeCredential,
  type MppFixture,
  startMppFixture,
} from '../helpers/mpp.ts';
import { SANDBOX_KEY } from '../helpers/purchase.ts';

const SECRET = 'test-secret-key-test-secret-key-32-bytes!!';
const PLAN = '/api/mpp/plans/svc-pro-monthly';

function post(fixture: MppFixture, headers: Record<string, string>) {
  return fetch(`${fixture.url}${PLAN}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(BUYER),
  });
}

async function problemType(response: Response): Promise<string> {
  return ((await response.json()) as { type: string }).type.replace('https://paymentauth.org/problems/', '');
}

function mppxClient(fixture: MppFixture) {
  const psp = {
    ...stripe.charge({
      paymentMethod: 'pm_card_visa',
      createToken: async ({ amount, currency, expiresAt }) => {
        const form = new URLSearchParams({
          payment_method: 'pm_card_visa',
          'usage_limits[currency]': currency,
          'usage_limits[max_amount]': amount,
          'usage_limits[expires_at]': String(expiresAt),
        });
        const response = await fetch(`${fixture.sandbox.url}/v1/test_helpers/shared_payment/granted_tokens`, {
          method: 'POST',
          headers: { authorization: `Bearer ${SANDBOX_KEY}` },
          body: form,
        });
        return ((await response.json()) as { id: string }).id;
      },
    }),
    name: 'psp' as const,
  };
  return Mppx.create({ methods: [psp], polyfill: false });
}

async function mintSpt(fixture: MppFixture): Promise<string> {
  return fixture.mintToken();
}

describe('MPP challenge binding of the credential field (draft-httpauth-payment-01)', () => {
  it('binds header= into the id in the slot mppx uses, leaving ids without it unchanged', () => {
    const found = findSellableItem('svc-pro-monthly');
    assert.ok(found.ok);
    const route = paidRouteFor(found.value, { realm: 'svc.test', networkId: 'profile_test_sandbox' });
    const now = new Date('2030-01-01T00:00:00.000Z');
    const withField = issueChallenge(route, SECRET, now, 'Payment-Authorization');
    assert.equal(withField.header, 'Payment-Authorization');
    const parsed = Challenge.deserialize(formatChallenge(withField));
    assert.equal(parsed.header, 'Payment-Authorization');
    assert.equal(Challenge.verify(parsed, { secretKey: SECRET }), true, 'mppx computes the same id');
    assert.notEqual(challengeId(SECRET, { ...withField, header: undefined }), withField.id);
    const plain = issueChallenge(route, SECRET, now);
    assert.equal(plain.header, undefined);
    assert.equal(challengeId(SECRET, { ...plain, header: 'Authorization' }), plain.id);
  });
});

describe(`MPP Payment-Authorization on ${testDialect}`, () => {
  it('lets mppx pay in Payment-Authorization beside its own Authorization, answered private', async (t) => {
    const fixture = await startMppFixture(t);
    fixture.clock.set(new Date());
    const challenged = await post(fixture, { authorization: 'Bearer agent-own-token' });
    assert.equal(challenged.status, 402);
    assert.equal(
      challengeParams(challenged.headers.get('www-authenticate') ?? '').header,
      'Payment-Authorization',
    );
    assert.equal(challenged.headers.get('cache-control'), 'no-store');

    const response = await mppxClient(fixture).fetch(`${fixture.url}${PLAN}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer agent-own-token' },
      body: JSON.stringify(BUYER),
    });
    assert.equal(response.status, 200, await response.clone().text());
    assert.match(String(response.headers.get('cache-control')), /private/);
    assert.deepEqual((await fixture.counts()).succeeded, 1);
  });

  it('reads the credential only from the field its challenge names', async (t) => {
    const fixture = await startMppFixture(t);
    fixture.clock.set(new Date());
    const challenged = await post(fixture, { authorization: 'Bearer agent-own-token' });
    const challenge = Challenge.fromResponse(challenged);
    const credential = Credential.serialize(
      Credential.from({ challenge, payload: { spt: await mintSpt(fixture) } }),
    );
    const wrongField = await post(fixture, { authorization: credential });
    assert.equal(wrongField.status, 402);
    assert.equal(await problemType(wrongField), 'invalid-challenge');

    const plain = Challenge.fromResponse(await post(fixture, {}));
    const plainCredential = Credential.serialize(
      Credential.from({ challenge: plain, payload: { spt: await mintSpt(fixture) } }),
    );
    const movedField = await post(fixture, { 'payment-authorization': plainCredential });
    assert.equal(await problemType(movedField), 'invalid-challenge');
    assert.equal(movedField.headers.get('cache-control'), 'no-store, private');
    assert.equal((await fixture.counts()).paymentIntents, 0, 'nothing charged');
  });

  it('refuses a credential whose echoed header was stripped or altered', async (t) => {
    const fixture = await startMppFixture(t);
    fixture.clock.set(new Date());
    const challenged = await post(fixture, { authorization: 'Bearer agent-own-token' });
    const params = challengeParams(challenged.headers.get('www-authenticate') ?? '');
    const spt = await mintSpt(fixture);
    const { header: _stripped, description: _d, ...echo } = params;
    for (const tampered of [echo, { ...params, header: 'X-Payment' }, { ...params, opaque: 'e30' }]) {
      const answer = await post(fixture, {
        authorization:
          tampered.header === undefined
            ? encodeCredential({ challenge: tampered, payload: { spt } })
            : 'Bearer x',
        ...(tampered.header === undefined
          ? {}
          : { 'payment-authorization': encodeCredential({ challenge: tampered, payload: { spt } }) }),
      });
      assert.equal(answer.status, 402);
      assert.equal(await problemType(answer), 'invalid-challenge');
    }
    assert.equal((await fixture.counts()).paymentIntents, 0);
  });

  it('answers bad-request (400) to a Payment credential in both fields', async (t) => {
    const fixture = await startMppFixture(t);
    const credential = encodeCredential({ challenge: { id: 'x' }, payload: {} });
    const answer = await post(fixture, { authorization: credential, 'payment-authorization': credential });
    assert.equal(answer.status, 400);
    const body = (await answer.json()) as { type: string; code: string };
    assert.equal(body.type, 'https://paymentauth.org/problems/bad-request');
    assert.equal(answer.headers.get('www-authenticate'), null);
  });
});
