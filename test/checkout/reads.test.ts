// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { completeSession, createSession } from '../../src/checkout/index.ts';
import type { FailpointName } from '../../src/purchase/index.ts';
import { crashOnceAt, SimulatedCrash } from '../../src/purchase/index.ts';
import { completeBody, expectError, expectSession, injectingClient } from '../channels/acp-client.ts';
import { testDialect } from '../helpers/database.ts';
import { type PurchaseFixture, startPurchaseFixture } from '../helpers/purchase.ts';

/** The recovery sweep leaves attempts alone for 30 s after they were last touched. */
const PAST_RECOVERY_GRACE_MS = 31_000;

/** An ACP session whose complete "crashed" at `failpoint`, after the provider charged the token. */
async function interruptedPurchase(t: TestContext, failpoint: FailpointName) {
  const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt(failpoint) });
  const created = await createSession(fixture.runtime.checkout, {
    channel: 'acp',
    itemId: 'svc-starter-monthly',
    buyer: { email: 'reader@example.com' },
  });
  assert.ok(created.ok);
  const sessionId = created.value.id;
  const token = await fixture.mintToken();
  await assert.rejects(completeSession(fixture.runtime.checkout, sessionId, 'acp', token), SimulatedCrash);
  return { fixture, sessionId, token, acp: injectingClient(fixture.runtime.app) };
}

async function storedStatuses(fixture: PurchaseFixture) {
  const db = fixture.runtime.database.db;
  const session = await db.selectFrom('checkout_sessions').select('status').executeTakeFirstOrThrow();
  const attempt = await db.selectFrom('payment_attempts').select('status').executeTakeFirstOrThrow();
  return { session: session.status, attempt: attempt.status };
}

describe(`reading a checkout session on ${testDialect}`, () => {
  it('does not provision a charged but unprovisioned purchase; a retried complete does, with no second charge', async (t) => {
    const { fixture, sessionId, token, acp } = await interruptedPurchase(t, 'after_charge_recorded');
    for (let read = 0; read < 3; read++) {
      const shown = expectSession(await acp.get(sessionId));
      assert.equal(shown.status, 'complete_in_progress');
      assert.equal(shown.order, undefined);
    }
    assert.deepEqual(await storedStatuses(fixture), { session: 'paying', attempt: 'charged' });
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 1,
      succeeded: 1,
      orders: 0,
      workspaces: 0,
      emails: 0,
    });
    expectError(await acp.cancel(sessionId, {}), 409, 'payment_in_progress');
    expectError(
      await acp.update(sessionId, { line_items: [{ id: 'svc-pro-annual' }] }),
      409,
      'payment_in_progress',
    );

    const completed = expectSession(await acp.complete(sessionId, completeBody(token)));
    assert.equal(completed.status, 'completed');
    assert.ok(completed.order);
    assert.deepEqual(await storedStatuses(fixture), { session: 'completed', attempt: 'completed' });
    const counts = await fixture.counts();
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
  });

  it('leaves an interrupted purchase to the recovery sweep, after which the session shows its order', async (t) => {
    const { fixture, sessionId, acp } = await interruptedPurchase(t, 'after_charge_recorded');
    fixture.clock.advance(PAST_RECOVERY_GRACE_MS);
    assert.equal(expectSession(await acp.get(sessionId)).status, 'complete_in_progress');
    assert.equal(
      (await fixture.counts()).orders,
      0,
      'a read past the grace period provisions nothing either',
    );

    await fixture.runtime.jobs.runSweeps();
    assert.deepEqual(await storedStatuses(fixture), { session: 'completed', attempt: 'completed' });
    const shown = expectSession(await acp.get(sessionId));
    assert.equal(shown.status, 'completed');
    const counts = await fixture.counts();
    assert.equal(
      shown.order?.id,
      (await fixture.runtime.database.db.selectFrom('orders').select('id').executeTakeFirstOrThrow()).id,
    );
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
  });

  it('shows a purchase finished elsewhere as completed without writing; the sweep then records it on the session', async (t) => {
    const { fixture, sessionId, acp } = await interruptedPurchase(t, 'after_provisioning');
    const shown = expectSession(await acp.get(sessionId));
    assert.equal(shown.status, 'completed');
    assert.ok(shown.order);
    assert.deepEqual(await storedStatuses(fixture), { session: 'paying', attempt: 'completed' });

    await fixture.runtime.jobs.runSweeps();
    assert.deepEqual(await storedStatuses(fixture), { session: 'completed', attempt: 'completed' });
    assert.equal(expectSession(await acp.get(sessionId)).order?.id, shown.order.id);
    const counts = await fixture.counts();
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
  });
});
