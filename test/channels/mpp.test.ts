// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Challenge, Receipt } from 'mppx';
import { deleteOldClaims } from '../../src/channels/mpp/index.ts';
import { claimChallenge, loadOrCreateChallengeSecret } from '../../src/channels/mpp/store.ts';
import type { Failpoints } from '../../src/purchase/index.ts';
import { DAY_MS, MINUTE_MS } from '../../src/shared/clock.ts';
import { testDialect } from '../helpers/database.ts';
import {
  BUYER,
  challengeParams,
  decodeBase64urlJson,
  encodeCredential,
  type MppFixture,
  payingCredential,
  readPaymentProblem,
  readProblem,
  readResult,
  startMppFixture,
} from '../helpers/mpp.ts';

const PRO_MONTHLY = 'svc-pro-monthly';

/** Asserts the draft's 402: problem type, a fresh challenge whose id the body names, no receipt. */
async function assertChallenged(response: Response, problemCode: string, previousId?: string): Promise<void> {
  assert.equal(response.status, 402);
  assert.equal(response.headers.get('cache-control'), 'no-store');
  assert.match(String(response.headers.get('content-type')), /^application\/problem\+json/);
  assert.equal(response.headers.get('payment-receipt'), null);
  const header = response.headers.get('www-authenticate');
  assert.ok(header, 'a 402 must carry a challenge');
  const params = challengeParams(header);
  const body = await readPaymentProblem(response.clone());
  assert.equal(body.type, `https://paymentauth.org/problems/${problemCode}`);
  assert.equal(body.status, 402);
  assert.equal(body.challengeId, params.id);
  if (previousId !== undefined) assert.notEqual(params.id, previousId);
}

function idOf(response: Response): string {
  return challengeParams(response.headers.get('www-authenticate') ?? '').id ?? '';
}

/** The credential JSON an SDK would send for the challenge of `response`. */
function echoedCredential(response: Response, spt: string) {
  const params = challengeParams(response.headers.get('www-authenticate') ?? '');
  return { challenge: params, payload: { spt } };
}

async function payOnce(fixture: MppFixture, itemId: string, paymentMethod = 'pm_card_visa') {
  const challenged = await fixture.buy(itemId);
  const spt = await fixture.mintToken({ paymentMethod });
  const authorization = payingCredential(challenged, spt);
  return { challenged, spt, authorization, paid: await fixture.buy(itemId, { authorization }) };
}

function failOnceAt(name: Parameters<Failpoints['hit']>[0]): Failpoints {
  let armed = true;
  return {
    async hit(reached) {
      if (armed && reached === name) {
        armed = false;
        throw new Error('the database went away mid-provisioning');
      }
    },
  };
}

describe(`MPP channel on ${testDialect}`, () => {
  it('answers an unpaid request with 402, a 15-minute challenge for the item price and a problem body', async (t) => {
    const fixture = await startMppFixture(t);
    const response = await fixture.buy('svc-enterprise-annual');
    await assertChallenged(response, 'payment-required');
    const params = challengeParams(response.headers.get('www-authenticate') ?? '');
    assert.equal(params.realm, 'svc.test');
    assert.equal(params.method, 'psp');
    assert.equal(params.intent, 'charge');
    assert.equal(params.description, 'Enterprise plan, one year prepaid, does not renew');
    assert.equal(params.expires, '2026-03-01T12:15:00.000Z');
    assert.deepEqual(decodeBase64urlJson(params.request ?? ''), {
      amount: '1999000',
      currency: 'usd',
      methodDetails: { networkId: fixture.runtime.config.psp.networkProfileId, paymentMethodTypes: ['card'] },
    });
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 0,
      succeeded: 0,
      orders: 0,
      workspaces: 0,
      emails: 0,
    });
  });

  it('rejects a missing or invalid buyer email with 400 before any challenge or charge', async (t) => {
    const fixture = await startMppFixture(t);
    const { authorization } = await payOnce(fixture, 'svc-starter-monthly', 'pm_card_visa_chargeDeclined');
    for (const body of [
      {},
      { buyer: {} },
      { buyer: { email: 'not-an-email' } },
      { buyer: { email: 'x@y' } },
    ]) {
      const response = await fixture.buy(PRO_MONTHLY, { body, authorization });
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.match(String(response.headers.get('content-type')), /^application\/problem\+json/);
      assert.equal(response.headers.get('www-authenticate'), null);
      assert.equal((await readProblem(response)).code, 'invalid_request');
    }
    assert.equal((await fixture.counts()).paymentIntents, 1);
  });

  it('sells only the six items: other catalog items have no paid route', async (t) => {
    const fixture = await startMppFixture(t);
    assert.equal((await fixture.buy('svc-msp-monthly')).status, 404);
    assert.equal((await fixture.buy('svc-addon-additional-framework')).status, 404);
  });

  it('pays: 200 with the purchase result, a receipt naming the payment intent, Cache-Control private', async (t) => {
    const fixture = await startMppFixture(t);
    const { paid } = await payOnce(fixture, PRO_MONTHLY);
    assert.equal(paid.status, 200);
    assert.equal(paid.headers.get('cache-control'), 'private');
    const result = await readResult(paid);
    assert.deepEqual(
      {
        ...result,
        order_id: typeof result.order_id,
        order_url: result.order_url
          .replace(result.order_id, '{id}')
          .replace(/key=[A-Za-z0-9_-]{43}$/, 'key={key}'),
        message: typeof result.message,
      },
      {
        status: 'completed',
        order_id: 'string',
        order_url: `${fixture.runtime.config.baseUrl}/orders/{id}?key={key}`,
        plan: 'pro',
        amount: '29900',
        currency: 'usd',
        renews: false,
        message: 'string',
      },
    );
    assert.match(result.message, /^Paid\. A Pro workspace was created;/);
    const [intent] = fixture.sandbox.state.listPaymentIntents();
    assert.equal(intent?.amount, 29900);
    const receipt = Receipt.deserialize(String(paid.headers.get('payment-receipt')));
    assert.deepEqual(receipt, {
      method: 'psp',
      reference: intent?.id,
      status: 'success',
      timestamp: '2026-03-01T12:00:00.000Z',
    });
    await fixture.deliverMail();
    const [invitation] = await fixture.smtp.waitFor(1);
    assert.equal(invitation?.to && 'text' in invitation.to ? invitation.to.text : '', BUYER.buyer.email);
    const counts = await fixture.counts();
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
    const enterprise = await readResult((await payOnce(fixture, 'svc-enterprise-monthly')).paid);
    assert.match(enterprise.message, /^Paid\. An Enterprise workspace was created;/);
  });

  it('repeats the identical request with the same result and receipt; another token on the challenge is refused', async (t) => {
    const fixture = await startMppFixture(t);
    const { challenged, authorization, paid } = await payOnce(fixture, PRO_MONTHLY);
    const first = { body: await paid.text(), receipt: paid.headers.get('payment-receipt') };
    fixture.clock.advance(MINUTE_MS);
    const again = await fixture.buy(PRO_MONTHLY, { authorization });
    assert.equal(again.status, 200);
    assert.deepEqual({ body: await again.text(), receipt: again.headers.get('payment-receipt') }, first);

    const otherToken = payingCredential(challenged, await fixture.mintToken());
    await assertChallenged(
      await fixture.buy(PRO_MONTHLY, { authorization: otherToken }),
      'invalid-challenge',
    );
    const otherBuyer = await fixture.buy(PRO_MONTHLY, {
      authorization,
      body: { buyer: { email: 'someone.else@example.com' } },
    });
    await assertChallenged(otherBuyer, 'invalid-challenge');
    const counts = await fixture.counts();
    assert.deepEqual([counts.paymentIntents, counts.orders, counts.workspaces], [1, 1, 1]);
  });

  it('refuses an expired challenge with payment-expired and a fresh challenge', async (t) => {
    const fixture = await startMppFixture(t);
    const challenged = await fixture.buy(PRO_MONTHLY);
    const authorization = payingCredential(challenged, await fixture.mintToken());
    fixture.clock.advance(15 * MINUTE_MS);
    const expired = await fixture.buy(PRO_MONTHLY, { authorization });
    await assertChallenged(expired, 'payment-expired', idOf(challenged));
    assert.equal(
      challengeParams(expired.headers.get('www-authenticate') ?? '').expires,
      '2026-03-01T12:30:00.000Z',
    );
    assert.equal((await fixture.counts()).paymentIntents, 0);
  });

  it('refuses forged, foreign and broken credentials with the right problem and a fresh challenge, never a 500', async (t) => {
    const fixture = await startMppFixture(t);
    const challenged = await fixture.buy(PRO_MONTHLY);
    const spt = await fixture.mintToken();
    const genuine = echoedCredential(challenged, spt);
    const cheap = await fixture.buy('svc-starter-monthly');
    const tamperedRequest = Buffer.from(
      JSON.stringify({ ...decodeBase64urlJson(genuine.challenge.request ?? ''), amount: '100' }),
    ).toString('base64url');
    const { expires: _dropped, ...withoutExpires } = genuine.challenge;

    const cases: [string, string][] = [
      ['invalid-challenge', payingCredential(cheap, spt)],
      [
        'invalid-challenge',
        encodeCredential({ ...genuine, challenge: { ...genuine.challenge, request: tamperedRequest } }),
      ],
      ['invalid-challenge', encodeCredential({ ...genuine, challenge: withoutExpires })],
      [
        'invalid-challenge',
        encodeCredential({
          ...genuine,
          challenge: { ...genuine.challenge, expires: '2099-01-01T00:00:00.000Z' },
        }),
      ],
      [
        'invalid-challenge',
        encodeCredential({ ...genuine, challenge: { ...genuine.challenge, id: 'made-up' } }),
      ],
      ['malformed-credential', 'Payment dGhpcyBpcyBnYXJiYWdl'],
      ['malformed-credential', 'Payment !!!not base64'],
      ['malformed-credential', 'Payment'],
      ['malformed-credential', encodeCredential({ challenge: 'nope', payload: {} })],
      ['malformed-credential', `Payment ${'A'.repeat(6000)}`],
      ['invalid-payload', encodeCredential({ ...genuine, payload: { foo: 1 } })],
      ['invalid-payload', encodeCredential({ ...genuine, payload: { spt: 42 } })],
    ];
    for (const [problemCode, authorization] of cases) {
      await assertChallenged(
        await fixture.buy(PRO_MONTHLY, { authorization }),
        problemCode,
        idOf(challenged),
      );
    }
    await assertChallenged(
      await fixture.buy(PRO_MONTHLY, { authorization: 'Bearer svc_live_unrelated' }),
      'payment-required',
    );
    assert.equal((await fixture.counts()).paymentIntents, 0);

    const stillGood = await fixture.buy(PRO_MONTHLY, { authorization: encodeCredential(genuine) });
    assert.equal(stillGood.status, 200);
  });

  for (const [paymentMethod, problemCode, declineCode] of [
    ['pm_card_visa_chargeDeclined', 'verification-failed', 'generic_decline'],
    ['pm_card_visa_chargeDeclinedInsufficientFunds', 'verification-failed', 'insufficient_funds'],
    ['pm_card_authenticationRequired', 'payment-action-required', 'requires_3ds'],
  ] as const) {
    it(`answers ${declineCode} with 402 and a new challenge, which a good token then pays`, async (t) => {
      const fixture = await startMppFixture(t);
      const {
        challenged,
        authorization,
        paid: declined,
      } = await payOnce(fixture, PRO_MONTHLY, paymentMethod);
      await assertChallenged(declined, problemCode, idOf(challenged));
      assert.equal((await readPaymentProblem(declined.clone())).decline_code, declineCode);

      const repeated = await fixture.buy(PRO_MONTHLY, { authorization });
      await assertChallenged(repeated, problemCode);
      const paid = await fixture.buy(PRO_MONTHLY, {
        authorization: payingCredential(declined, await fixture.mintToken()),
      });
      assert.equal(paid.status, 200);
      const counts = await fixture.counts();
      assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
    });
  }

  it('charges once and creates one workspace for 20 concurrent identical paid requests', async (t) => {
    const fixture = await startMppFixture(t);
    fixture.sandbox.faults.latency(100);
    const challenged = await fixture.buy(PRO_MONTHLY);
    const authorization = payingCredential(challenged, await fixture.mintToken());
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => fixture.buy(PRO_MONTHLY, { authorization })),
    );
    assert.deepEqual(
      responses.map((r) => r.status),
      Array(20).fill(200),
    );
    const orders = new Set(await Promise.all(responses.map(async (r) => (await readResult(r)).order_id)));
    const receipts = new Set(responses.map((r) => r.headers.get('payment-receipt')));
    assert.deepEqual([orders.size, receipts.size], [1, 1]);
    const counts = await fixture.counts();
    assert.deepEqual([counts.paymentIntents, counts.orders, counts.workspaces], [1, 1, 1]);
  });

  it('answers 503 with Retry-After when setup fails after the charge; the identical request finishes it, even after expiry', async (t) => {
    const fixture = await startMppFixture(t, { failpoints: failOnceAt('before_provisioning_commit') });
    const { authorization, paid: unfinished } = await payOnce(fixture, PRO_MONTHLY);
    assert.equal(unfinished.status, 503);
    assert.equal(unfinished.headers.get('retry-after'), '2');
    assert.equal(unfinished.headers.get('www-authenticate'), null);
    assert.equal(unfinished.headers.get('payment-receipt'), null);
    assert.equal((await readProblem(unfinished)).code, 'setup_pending');
    assert.deepEqual((await fixture.counts()).workspaces, 0);

    fixture.clock.advance(16 * MINUTE_MS);
    const finished = await fixture.buy(PRO_MONTHLY, { authorization });
    assert.equal(finished.status, 200);
    assert.ok(finished.headers.get('payment-receipt'));
    const counts = await fixture.counts();
    assert.deepEqual([counts.paymentIntents, counts.succeeded, counts.workspaces], [1, 1, 1]);
  });

  it('answers a payload that fails the psp schema invalid-payload, even when it is not an object (draft: payload fails the method schema)', async (t) => {
    const fixture = await startMppFixture(t);
    const challenged = await fixture.buy(PRO_MONTHLY);
    const { challenge } = echoedCredential(challenged, 'unused');
    for (const payload of ['spt_as_a_string', null, ['spt_x']]) {
      await assertChallenged(
        await fixture.buy(PRO_MONTHLY, { authorization: encodeCredential({ challenge, payload }) }),
        'invalid-payload',
        idOf(challenged),
      );
    }
    await assertChallenged(
      await fixture.buy(PRO_MONTHLY, { authorization: encodeCredential({ challenge }) }),
      'malformed-credential',
    );
    assert.equal((await fixture.counts()).paymentIntents, 0);
  });

  it('types every 400 of a paid route bad-request and keeps its code; no challenge comes with it', async (t) => {
    const fixture = await startMppFixture(t);
    const invalid = await fixture.buy(PRO_MONTHLY, { body: { buyer: { email: 'not-an-email' } } });
    const notJson = await fetch(`${fixture.url}/api/mpp/plans/${PRO_MONTHLY}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"buyer":',
    });
    for (const [response, code] of [
      [invalid, 'invalid_request'],
      [notJson, 'invalid_json'],
    ] as const) {
      assert.equal(response.status, 400);
      assert.equal(response.headers.get('www-authenticate'), null);
      const body = await readProblem(response);
      assert.deepEqual(
        [body.type, body.title, body.code],
        ['https://paymentauth.org/problems/bad-request', 'Bad Request', code],
      );
    }
  });

  it('answers a failure on our side 500 internal-payment-error without a challenge; the identical request then pays once', async (t) => {
    const fixture = await startMppFixture(t, { failpoints: failOnceAt('after_attempt_recorded') });
    const { authorization, paid: failed } = await payOnce(fixture, PRO_MONTHLY);
    assert.equal(failed.status, 500);
    assert.match(String(failed.headers.get('content-type')), /^application\/problem\+json/);
    assert.equal(failed.headers.get('www-authenticate'), null);
    const body = await readProblem(failed);
    assert.deepEqual(
      [body.type, body.title, body.status, body.code],
      [
        'https://paymentauth.org/problems/internal-payment-error',
        'Internal Payment Error',
        500,
        'internal_error',
      ],
    );
    assert.doesNotMatch(JSON.stringify(body), /database went away/);

    const paid = await fixture.buy(PRO_MONTHLY, { authorization });
    assert.equal(paid.status, 200);
    assert.equal((await fixture.counts()).succeeded, 1);
  });

  it('answers 503 while the provider outcome is unknown; the identical request then completes with one charge', async (t) => {
    const fixture = await startMppFixture(t, { maxNetworkRetries: 0 });
    const challenged = await fixture.buy(PRO_MONTHLY);
    const authorization = payingCredential(challenged, await fixture.mintToken());
    fixture.sandbox.faults.failNext(1, 500);
    const unknown = await fixture.buy(PRO_MONTHLY, { authorization });
    assert.equal(unknown.status, 503);
    assert.equal((await readProblem(unknown)).code, 'payment_pending');
    const paid = await fixture.buy(PRO_MONTHLY, { authorization });
    assert.equal(paid.status, 200);
    assert.equal((await fixture.counts()).succeeded, 1);
  });

  it('lets browsers call it: preflight for the six paths, challenge and receipt headers exposed', async (t) => {
    const fixture = await startMppFixture(t);
    const preflight = await fetch(`${fixture.url}/api/mpp/plans/${PRO_MONTHLY}`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://agent.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.match(String(preflight.headers.get('access-control-allow-methods')), /POST/);
    assert.match(String(preflight.headers.get('access-control-allow-headers')), /Authorization/);
    const { challenged, paid } = await payOnce(fixture, PRO_MONTHLY);
    for (const response of [challenged, paid]) {
      assert.equal(response.headers.get('access-control-allow-origin'), '*');
      assert.match(String(response.headers.get('access-control-expose-headers')), /WWW-Authenticate/);
      assert.match(String(response.headers.get('access-control-expose-headers')), /Payment-Receipt/);
    }
  });
});

describe(`MPP challenge claims and secret on ${testDialect}`, () => {
  it('lets one fingerprint hold a challenge id; old claims are forgotten a day after expiry', async (t) => {
    const { runtime } = await startMppFixture(t);
    const db = runtime.database.db;
    const now = runtime.clock.now().getTime();
    const claim = {
      challengeId: 'ch_1',
      itemId: PRO_MONTHLY,
      fingerprint: 'a',
      expiresAt: now + 15 * MINUTE_MS,
    };
    const [a, b] = await Promise.all([
      claimChallenge(db, claim, now),
      claimChallenge(db, { ...claim, fingerprint: 'b' }, now),
    ]);
    assert.notEqual(a, b, 'exactly one request holds the challenge');
    assert.equal(await claimChallenge(db, { ...claim, fingerprint: a ? 'a' : 'b' }, now), true);
    assert.equal(await deleteOldClaims(db, now + DAY_MS), 0);
    assert.equal(await deleteOldClaims(db, now + 15 * MINUTE_MS + DAY_MS + 1), 1);
  });

  it('generates the challenge secret once and shares it; challenges are signed with it', async (t) => {
    const fixture = await startMppFixture(t);
    const db = fixture.runtime.database.db;
    const [a, b] = await Promise.all([
      loadOrCreateChallengeSecret(db, 0),
      loadOrCreateChallengeSecret(db, 0),
    ]);
    assert.equal(a, b);
    assert.ok(Buffer.byteLength(a ?? '') >= 32);
    const challenge = Challenge.fromResponse(await fixture.buy(PRO_MONTHLY));
    assert.equal(Challenge.verify(challenge, { secretKey: a ?? '' }), true);
  });
});

describe('MPP on two instances sharing one PostgreSQL', { skip: testDialect !== 'postgres' }, () => {
  it("accepts either instance's challenge and charges it once when both are paid at the same time", async (t) => {
    const fixture = await startMppFixture(t);
    fixture.sandbox.faults.latency(50);
    const second = await fixture.startSecondInstance();
    const secondUrl = await second.app.listen({ host: '127.0.0.1', port: 0 });
    const buyAtSecond = (authorization: string) =>
      fetch(`${secondUrl}/api/mpp/plans/${PRO_MONTHLY}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify(BUYER),
      });

    const challenged = await fixture.buy(PRO_MONTHLY);
    const authorization = payingCredential(challenged, await fixture.mintToken());
    const rival = payingCredential(challenged, await fixture.mintToken());
    const responses = await Promise.all([
      ...Array.from({ length: 10 }, (_, i) =>
        i % 2 ? buyAtSecond(authorization) : fixture.buy(PRO_MONTHLY, { authorization }),
      ),
      buyAtSecond(rival),
    ]);
    const rivalWon = responses[10]?.status === 200;
    assert.deepEqual(
      responses.map((r) => r.status),
      rivalWon ? [...Array(10).fill(402), 200] : [...Array(10).fill(200), 402],
    );
    const counts = await fixture.counts();
    assert.deepEqual([counts.paymentIntents, counts.succeeded, counts.workspaces], [1, 1, 1]);
  });
});
