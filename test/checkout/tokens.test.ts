// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { completeSession, createSession } from '../../src/checkout/index.ts';
import { crashOnceAt, recoverUnfinishedPurchases, SimulatedCrash } from '../../src/purchase/index.ts';
import { completeBody, createBody, expectSession, injectingClient } from '../channels/acp-client.ts';
import { testDialect } from '../helpers/database.ts';
import { Holds } from '../helpers/holds.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';
import { PROTOCOLS } from './agents.ts';

/** Past the recovery sweep's grace (30 s) and the charging request's lease (90 s). */
const PAST_LEASE_MS = 91_000;

describe(`which token a complete answers for on ${testDialect}`, () => {
  it('tries a new token when another token was declined and the decline is recorded but not yet applied to the session', async (t) => {
    const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt('after_charge') });
    const deps = fixture.runtime.checkout;
    const created = await createSession(deps, {
      channel: 'acp',
      itemId: 'svc-starter-monthly',
      buyer: { email: 'tokens@example.com' },
    });
    assert.ok(created.ok);
    const declining = await fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclined' });
    await assert.rejects(completeSession(deps, created.value.id, 'acp', declining), SimulatedCrash);
    fixture.clock.advance(PAST_LEASE_MS);
    // The recovery sweep records the decline; the settle sweep has not run yet.
    await recoverUnfinishedPurchases(deps.purchases);

    const good = await fixture.mintToken();
    const paid = await completeSession(deps, created.value.id, 'acp', good);
    assert.ok(paid.ok, JSON.stringify(!paid.ok && paid.error));
    assert.deepEqual([paid.value.status, paid.value.paymentError], ['completed', null]);
    const captured = fixture.sandbox.state.getGrantedToken(good)?.usage_details.amount_captured.value;
    assert.equal(captured, 9_900, 'the new token paid');
  });

  it('answers the declined token itself with its own decline, without another attempt', async (t) => {
    const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt('after_charge') });
    const deps = fixture.runtime.checkout;
    const created = await createSession(deps, {
      channel: 'ucp',
      itemId: 'svc-starter-monthly',
      buyer: { email: 'tokens@example.com' },
    });
    assert.ok(created.ok);
    const declining = await fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclined' });
    await assert.rejects(completeSession(deps, created.value.id, 'ucp', declining), SimulatedCrash);
    fixture.clock.advance(PAST_LEASE_MS);
    await recoverUnfinishedPurchases(deps.purchases);

    const again = await completeSession(deps, created.value.id, 'ucp', declining);
    assert.ok(again.ok);
    assert.deepEqual([again.value.status, again.value.paymentError?.code], ['ready', 'generic_decline']);
    const attempts = await fixture.runtime.database.db.selectFrom('payment_attempts').select('id').execute();
    assert.equal(attempts.length, 1);
  });
});

describe(`an ACP complete that carries a buyer on ${testDialect}`, () => {
  it('pays with that buyer, and its retry finishes the payment it claimed instead of being refused as busy', async (t) => {
    const holds = new Holds();
    const fixture = await startPurchaseFixture(t, { failpoints: holds });
    const acp = injectingClient(fixture.runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'first@example.com')), 201);
    const body = { ...completeBody(await fixture.mintToken()), buyer: { email: 'payer@example.com' } };
    const key = randomUUID();
    holds.crashNext('after_charge');
    assert.equal((await acp.complete(session.id, body, { key })).status, 500);

    fixture.clock.advance(PAST_LEASE_MS);
    const retried = expectSession(await acp.complete(session.id, body, { key }));
    assert.equal(retried.status, 'completed');
    const order = await fixture.runtime.database.db
      .selectFrom('orders')
      .select('buyer_email')
      .executeTakeFirstOrThrow();
    assert.equal(
      order.buyer_email,
      'payer@example.com',
      'the buyer sent with the complete is the one invited',
    );
    assert.equal((await fixture.counts()).succeeded, 1);
  });
});

describe(`a change that keeps losing to other changes on ${testDialect}`, () => {
  for (const channel of ['acp', 'ucp'] as const) {
    it(`${channel}: answers a retryable conflict, not "payment in progress"`, async (t) => {
      const holds = new Holds();
      const fixture = await startPurchaseFixture(t, { failpoints: holds });
      const created = await createSession(fixture.runtime.checkout, {
        channel,
        itemId: 'svc-starter-monthly',
        buyer: { email: 'racer@example.com' },
      });
      assert.ok(created.ok);
      const protocol = PROTOCOLS[channel];
      const agent = protocol.agentOn(fixture.runtime.app);
      const sessionId = created.value.id;

      let hold = holds.holdNext('before_session_write');
      const losing = agent.changeItem(sessionId, 'svc-enterprise-annual');
      for (let round = 1; round <= 3; round++) {
        await hold.reached;
        assert.ok(protocol.updateAccepted(await agent.changeItem(sessionId, 'svc-pro-monthly')));
        const previous = hold;
        if (round < 3) hold = holds.holdNext('before_session_write');
        previous.release();
      }
      const reply = await losing;
      assert.equal(reply.status, 409);
      assert.equal(protocol.errorCode(reply), 'conflict');
      assert.equal(protocol.session(await agent.get(sessionId)).total, 29_900, 'the winning changes stand');
    });
  }
});
