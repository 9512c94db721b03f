// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SELLABLE_ITEMS } from '../../src/catalog/index.ts';
import { purchase, resumePurchase } from '../../src/purchase/index.ts';
import { getWorkspace } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { purchaseRequest, startPurchaseFixture } from '../helpers/purchase.ts';

describe(`purchase pipeline on ${testDialect}`, () => {
  it('sells each of the six items: one charge of the right amount, one order, one workspace, one email', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const { runtime, sandbox } = fixture;
    for (const [index, item] of SELLABLE_ITEMS.entries()) {
      const token = await fixture.mintToken({ maxAmount: item.price.amount });
      const email = `owner${index}@example.com`;
      const outcome = await purchase(
        runtime.purchases,
        purchaseRequest(token, { itemId: item.id, buyer: { email, companyName: `Company ${index}` } }),
      );
      assert.equal(outcome.kind, 'completed', item.id);
      if (outcome.kind !== 'completed') continue;
      const { order } = outcome;
      assert.deepEqual(
        {
          itemId: order.itemId,
          plan: order.plan,
          term: order.term,
          amount: order.amount,
          currency: order.currency,
        },
        {
          itemId: item.id,
          plan: item.price.plan,
          term: item.price.term,
          amount: item.price.amount,
          currency: 'usd',
        },
      );
      const intent = sandbox.state.getPaymentIntent(order.paymentIntentId);
      assert.equal(intent?.status, 'succeeded');
      assert.equal(intent?.amount, item.price.amount);
      assert.equal(intent?.metadata.order_id, order.id);

      const workspace = await getWorkspace(runtime.database.db, order.workspaceId);
      assert.equal(workspace?.plan, item.price.plan);
      assert.equal(workspace?.name, `Company ${index}`);
      const expectedEnd =
        item.price.term === 'month' ? '2026-04-01T12:00:00.000Z' : '2027-03-01T12:00:00.000Z';
      assert.equal(workspace?.currentTerm?.endsAt.toISOString(), expectedEnd);
      assert.equal(workspace?.currentTerm?.renews, false);
      assert.equal(workspace?.currentTerm?.orderId, order.id);
    }
    await fixture.deliverMail();
    await fixture.smtp.waitFor(6);
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 6,
      succeeded: 6,
      orders: 6,
      workspaces: 6,
      emails: 6,
    });
    assert.deepEqual(
      fixture.smtp.received.map((mail) => (mail.to as { text: string }).text).sort(),
      SELLABLE_ITEMS.map((_, index) => `owner${index}@example.com`).sort(),
    );
    assert.match(fixture.smtp.received[0]?.text ?? '', /http:\/\/svc\.test\/invitations\/inv_/);
  });

  const declines = [
    ['pm_card_visa_chargeDeclined', 'generic_decline'],
    ['pm_card_visa_chargeDeclinedInsufficientFunds', 'insufficient_funds'],
    ['pm_card_authenticationRequired', 'requires_3ds'],
  ] as const;
  for (const [paymentMethod, code] of declines) {
    it(`reports ${code} as a declined outcome with nothing provisioned; a good token then succeeds`, async (t) => {
      const fixture = await startPurchaseFixture(t);
      const bad = await fixture.mintToken({ paymentMethod });
      const declined = await purchase(
        fixture.runtime.purchases,
        purchaseRequest(bad, { attemptKey: 'cs_x:1' }),
      );
      assert.equal(declined.kind, 'declined');
      if (declined.kind === 'declined') {
        assert.equal(declined.code, code);
        assert.ok(declined.message.length > 0);
      }
      const afterDecline = await fixture.counts();
      assert.deepEqual([afterDecline.succeeded, afterDecline.orders, afterDecline.workspaces], [0, 0, 0]);

      const again = await purchase(fixture.runtime.purchases, purchaseRequest(bad, { attemptKey: 'cs_x:1' }));
      assert.deepEqual(again, declined, 'repeating the declined attempt returns the recorded outcome');

      const good = await fixture.mintToken();
      const completed = await purchase(
        fixture.runtime.purchases,
        purchaseRequest(good, { attemptKey: 'cs_x:2' }),
      );
      assert.equal(completed.kind, 'completed');
      await fixture.deliverMail();
      await fixture.smtp.waitFor(1);
      const final = await fixture.counts();
      assert.deepEqual([final.succeeded, final.orders, final.workspaces, final.emails], [1, 1, 1, 1]);
    });
  }

  it('declines a token reused after success, over its max amount, in another currency or expired, without a charge', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const { purchases } = fixture.runtime;
    const used = await fixture.mintToken();
    assert.equal((await purchase(purchases, purchaseRequest(used))).kind, 'completed');

    const cases: [string, string][] = [
      [used, 'shared_payment_token_deactivated'],
      [await fixture.mintToken({ maxAmount: 29_899 }), 'amount_too_large'],
      [await fixture.mintToken({ currency: 'eur' }), 'payment_method_currency_mismatch'],
    ];
    const expiring = await fixture.mintToken({ expiresInSeconds: 60 });
    fixture.clock.advance(61_000);
    cases.push([expiring, 'shared_payment_token_expired']);

    for (const [token, code] of cases) {
      const outcome = await purchase(purchases, purchaseRequest(token));
      assert.equal(outcome.kind, 'declined', code);
      if (outcome.kind === 'declined') assert.equal(outcome.code, code);
    }
    const counts = await fixture.counts();
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
  });

  it('charges once when 20 requests race on the same attempt', async (t) => {
    const fixture = await startPurchaseFixture(t);
    fixture.sandbox.faults.latency(50);
    const token = await fixture.mintToken();
    const request = purchaseRequest(token, { attemptKey: 'cs_race:1' });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () => purchase(fixture.runtime.purchases, request)),
    );
    const kinds = outcomes.map((o) => o.kind);
    assert.equal(kinds.filter((k) => k === 'completed').length >= 1, true);
    assert.deepEqual(
      kinds.filter((k) => k !== 'completed' && k !== 'in_progress'),
      [],
      'every other racer is told the attempt is in progress',
    );
    const final = await purchase(fixture.runtime.purchases, request);
    assert.equal(final.kind, 'completed');
    await fixture.deliverMail();
    await fixture.smtp.waitFor(1);
    fixture.sandbox.faults.reset();
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 1,
      succeeded: 1,
      orders: 1,
      workspaces: 1,
      emails: 1,
    });
  });

  it('rejects the same attempt key with another token, and unknown or non-sellable items, before any charge', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const { purchases } = fixture.runtime;
    const first = await fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclined' });
    await purchase(purchases, purchaseRequest(first, { attemptKey: 'cs_y:1' }));
    const conflict = await purchase(
      purchases,
      purchaseRequest(await fixture.mintToken(), { attemptKey: 'cs_y:1' }),
    );
    assert.deepEqual(conflict.kind === 'rejected' && conflict.code, 'attempt_conflict');

    for (const [itemId, code] of [
      ['svc-gold-monthly', 'unknown_item'],
      ['svc-msp-monthly', 'not_sellable'],
      ['svc-credits-ai-500', 'not_sellable'],
    ] as const) {
      const outcome = await purchase(purchases, purchaseRequest(await fixture.mintToken(), { itemId }));
      assert.deepEqual(outcome.kind === 'rejected' && outcome.code, code);
    }
    assert.equal((await fixture.counts()).succeeded, 0);
  });

  it('finds the charge when the provider dropped its response, and still charges once', async (t) => {
    const fixture = await startPurchaseFixture(t);
    fixture.sandbox.faults.dropResponses(1);
    const outcome = await purchase(fixture.runtime.purchases, purchaseRequest(await fixture.mintToken()));
    assert.equal(outcome.kind, 'completed');
    const counts = await fixture.counts();
    assert.deepEqual([counts.paymentIntents, counts.succeeded, counts.orders], [1, 1, 1]);
  });

  it('reports an unreachable provider as unknown, and the repeated request completes with one charge', async (t) => {
    const fixture = await startPurchaseFixture(t, { maxNetworkRetries: 1 });
    const request = purchaseRequest(await fixture.mintToken());
    fixture.sandbox.faults.failNext(2, 503);
    const first = await purchase(fixture.runtime.purchases, request);
    assert.equal(first.kind, 'payment_unknown');
    assert.equal((await fixture.counts()).paymentIntents, 0);
    const second = await purchase(fixture.runtime.purchases, request);
    assert.equal(second.kind, 'completed');
    assert.equal((await fixture.counts()).succeeded, 1);
  });

  it('resumes a finished attempt as the same order', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const request = purchaseRequest(await fixture.mintToken());
    const done = await purchase(fixture.runtime.purchases, request);
    const resumed = await resumePurchase(fixture.runtime.purchases, request.attemptKey);
    assert.deepEqual(resumed, done);
    assert.equal(await resumePurchase(fixture.runtime.purchases, 'no-such-attempt'), undefined);
  });
});
