// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { crashOnceAt, type FailpointName, purchase, SimulatedCrash } from '../../src/purchase/index.ts';
import { testDialect } from '../helpers/database.ts';
import { type PurchaseFixture, purchaseRequest, startPurchaseFixture } from '../helpers/purchase.ts';

const FAILPOINTS: FailpointName[] = [
  'after_attempt_recorded',
  'after_charge',
  'after_charge_recorded',
  'before_provisioning_commit',
  'after_provisioning',
];
/** Longer than the charge lease a crashed request leaves behind. */
const PAST_LEASE_MS = 120_000;

async function assertExactlyOnce(fixture: PurchaseFixture): Promise<void> {
  await fixture.deliverMail();
  await fixture.smtp.waitFor(1);
  await new Promise((r) => setTimeout(r, 50));
  assert.deepEqual(await fixture.counts(), {
    paymentIntents: 1,
    succeeded: 1,
    orders: 1,
    workspaces: 1,
    emails: 1,
  });
}

describe(`purchase crash recovery on ${testDialect}`, () => {
  for (const failpoint of FAILPOINTS) {
    it(`finishes with one charge when the same request is repeated after a crash at ${failpoint}`, async (t) => {
      const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt(failpoint) });
      const request = purchaseRequest(await fixture.mintToken());
      await assert.rejects(purchase(fixture.runtime.purchases, request), SimulatedCrash);
      fixture.clock.advance(PAST_LEASE_MS);
      const outcome = await purchase(fixture.runtime.purchases, request);
      assert.equal(outcome.kind, 'completed');
      const again = await purchase(fixture.runtime.purchases, request);
      assert.deepEqual(again, outcome, 'and once more returns the same order');
      await assertExactlyOnce(fixture);
    });

    it(`lets the recovery job finish a purchase abandoned at ${failpoint}`, async (t) => {
      const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt(failpoint) });
      const request = purchaseRequest(await fixture.mintToken());
      await assert.rejects(purchase(fixture.runtime.purchases, request), SimulatedCrash);
      fixture.clock.advance(PAST_LEASE_MS);
      await fixture.runtime.jobs.runSweeps();
      const attempt = await fixture.runtime.database.db
        .selectFrom('payment_attempts')
        .selectAll()
        .executeTakeFirstOrThrow();
      assert.equal(attempt.status, 'completed');
      assert.equal(attempt.token, null, 'the token is not kept once the outcome is known');
      const outcome = await purchase(fixture.runtime.purchases, request);
      assert.equal(outcome.kind === 'completed' && outcome.order.id, attempt.order_id);
      await assertExactlyOnce(fixture);
    });
  }

  it('leaves a crashed attempt alone while its lease runs, so a slow request is not charged twice', async (t) => {
    const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt('after_charge') });
    const request = purchaseRequest(await fixture.mintToken());
    await assert.rejects(purchase(fixture.runtime.purchases, request), SimulatedCrash);
    const during = await purchase(fixture.runtime.purchases, request);
    assert.equal(during.kind, 'in_progress');
    await fixture.runtime.jobs.runSweeps();
    assert.equal((await fixture.counts()).orders, 0);
  });
});
