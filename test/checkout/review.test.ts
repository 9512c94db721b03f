// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { completeSession, createSession, settleSessions } from '../../src/checkout/index.ts';
import { SimulatedCrash } from '../../src/purchase/index.ts';
import { DAY_MS, HOUR_MS } from '../../src/shared/clock.ts';
import { completeBody, expectError, expectSession, injectingClient } from '../channels/acp-client.ts';
import { testDialect } from '../helpers/database.ts';
import { Holds } from '../helpers/holds.ts';
import { type PurchaseFixture, startPurchaseFixture } from '../helpers/purchase.ts';

const EMAIL = 'reviewed@example.com';

/**
 * An ACP session whose complete left its payment unknown (the provider answered 503, or charged
 * and the answer was lost), then the clock moved a day on: past the provider's idempotency window.
 */
async function unknownForADay(t: TestContext, lostAnswer: 'failed' | 'charged') {
  const fixture = await startPurchaseFixture(t, { maxNetworkRetries: 0, captureLogs: true });
  const acp = injectingClient(fixture.runtime.app);
  const session = expectSession(
    await acp.create({
      line_items: [{ id: 'svc-starter-monthly' }],
      currency: 'usd',
      buyer: { email: EMAIL },
    }),
    201,
  );
  const token = await fixture.mintToken({ expiresInSeconds: 3 * 24 * 3600 });
  if (lostAnswer === 'failed') fixture.sandbox.faults.failNext(1, 503);
  else fixture.sandbox.faults.dropResponses(5);
  expectError(await acp.complete(session.id, completeBody(token)), 409, 'payment_in_progress');
  fixture.clock.advance(DAY_MS);
  return { fixture, acp, sessionId: session.id, token };
}

function errorLines(fixture: PurchaseFixture): { msg: string; [field: string]: unknown }[] {
  return fixture.logs
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((line) => line.level >= 50);
}

async function storedAttempt(fixture: PurchaseFixture) {
  return fixture.runtime.database.db
    .selectFrom('payment_attempts')
    .select(['id', 'status', 'token', 'order_id'])
    .executeTakeFirstOrThrow();
}

describe(`payments past the provider's idempotency window on ${testDialect}`, () => {
  it('never sends an attempt past the window to the provider again, whatever token a complete carries', async (t) => {
    const { fixture, acp, sessionId, token } = await unknownForADay(t, 'failed');
    const intentsBefore = (await fixture.counts()).paymentIntents;
    for (const body of [completeBody(token), completeBody(await fixture.mintToken())]) {
      const refused = expectError(await acp.complete(sessionId, body), 409, 'payment_under_review');
      assert.match(refused.message, /person is reviewing/);
    }
    assert.equal((await fixture.counts()).paymentIntents, intentsBefore, 'the provider was not asked again');
    assert.equal((await fixture.counts()).succeeded, 0);
    assert.deepEqual(
      [(await storedAttempt(fixture)).status, (await storedAttempt(fixture)).token],
      ['needs_review', null],
      'set aside, its token erased',
    );

    const shown = expectSession(await acp.get(sessionId));
    assert.equal(shown.status, 'complete_in_progress');
    assert.ok(shown.messages.some((m) => m.type === 'info' && /person is reviewing/.test(m.content)));
    expectError(await acp.cancel(sessionId, {}), 409, 'payment_in_progress');
  });

  it('left alone, the sweeps set it aside and log the attempt and the stuck session once each, at error level, with ids only', async (t) => {
    const { fixture, sessionId, token } = await unknownForADay(t, 'failed');
    await fixture.runtime.jobs.runSweeps();
    fixture.clock.advance(HOUR_MS);
    await fixture.runtime.jobs.runSweeps();
    const attempt = await storedAttempt(fixture);
    assert.equal(attempt.status, 'needs_review');
    const errors = errorLines(fixture);
    const setAside = errors.filter((line) => /set aside for review/.test(line.msg));
    const stuck = errors.filter((line) => /stuck in paying/.test(line.msg));
    assert.equal(setAside.length, 1, JSON.stringify(errors));
    assert.equal(setAside[0]?.attemptId, attempt.id);
    assert.equal(stuck.length, 1, JSON.stringify(errors));
    const session = await fixture.runtime.database.db
      .selectFrom('checkout_sessions')
      .select(['id', 'status'])
      .executeTakeFirstOrThrow();
    assert.equal(stuck[0]?.sessionId, session.id);
    assert.equal(session.status, 'paying');
    const logged = JSON.stringify(errors);
    for (const secret of [EMAIL, token, sessionId]) assert.equal(logged.includes(secret), false);
  });

  it('a person who finds it charged at the provider marks it so; the sweeps provision it and complete the session, charged once', async (t) => {
    const { fixture, acp, sessionId } = await unknownForADay(t, 'charged');
    await fixture.runtime.jobs.runSweeps();
    const attempt = await storedAttempt(fixture);
    const intent = fixture.sandbox.state
      .listPaymentIntents()
      .find((pi) => pi.metadata.payment_attempt_id === attempt.id);
    assert.ok(intent, 'the provider has the payment under the attempt id');
    await fixture.runtime.database.db
      .updateTable('payment_attempts')
      .set({ status: 'charged', payment_intent_id: intent.id, charged_at: fixture.clock.now().getTime() })
      .where('id', '=', attempt.id)
      .execute();
    fixture.clock.advance(HOUR_MS);
    await fixture.runtime.jobs.runSweeps();
    const shown = expectSession(await acp.get(sessionId));
    assert.equal(shown.status, 'completed');
    assert.equal(shown.order?.id, attempt.order_id);
    const counts = await fixture.counts();
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
  });

  it('a person who finds nothing charged marks it failed; the sweep takes the session out of paying with the payment error recorded', async (t) => {
    const { fixture, acp, sessionId } = await unknownForADay(t, 'failed');
    await fixture.runtime.jobs.runSweeps();
    await fixture.runtime.database.db
      .updateTable('payment_attempts')
      .set({ status: 'failed', last_error: 'Nothing was charged; the provider never received the payment.' })
      .execute();
    await fixture.runtime.jobs.runSweeps();
    const shown = expectSession(await acp.get(sessionId));
    // The session's hour passed while it was paying: it reads expired now that it is open again.
    assert.equal(shown.status, 'expired');
    assert.ok(
      shown.messages.some((m) => m.type === 'error' && /never received the payment/.test(m.content)),
      'the failed payment is recorded on the session',
    );
  });
});

describe(`the settle sweep on ${testDialect}`, () => {
  it('records the error of a payment the provider refused, and settles every other session when one of them cannot be', async (t) => {
    const holds = new Holds();
    const fixture = await startPurchaseFixture(t, { failpoints: holds, captureLogs: true });
    const deps = fixture.runtime.checkout;
    // Three sessions whose completes died after their payments settled: paid, refused, paid.
    for (const refused of [false, true, false]) {
      const created = await createSession(deps, {
        channel: 'ucp',
        itemId: 'svc-pro-monthly',
        buyer: { email: EMAIL },
      });
      assert.ok(created.ok);
      const token = await fixture.mintToken();
      holds.crashNext('before_session_settled');
      if (refused) fixture.sandbox.faults.failNext(1, 401);
      await assert.rejects(completeSession(deps, created.value.id, 'ucp', token), SimulatedCrash);
      fixture.clock.advance(1);
    }
    const db = fixture.runtime.database.db;
    const rows = await db.selectFrom('checkout_sessions').select(['id', 'status']).orderBy('id').execute();
    assert.deepEqual(
      rows.map((row) => row.status),
      ['paying', 'paying', 'paying'],
    );
    // The first session in the sweep's order names an order that is gone: settling it throws.
    await db
      .updateTable('payment_attempts')
      .set({ order_id: 'ord_missing' })
      .where('attempt_key', '=', `ucp:${rows[0]?.id}:1`)
      .execute();

    assert.equal(await settleSessions(deps), 2);
    const after = await db
      .selectFrom('checkout_sessions')
      .select(['status', 'payment_error_code'])
      .orderBy('id')
      .execute();
    assert.deepEqual(
      after.map((row) => ({ ...row })),
      [
        { status: 'paying', payment_error_code: null },
        { status: 'ready', payment_error_code: 'payment_failed' },
        { status: 'completed', payment_error_code: null },
      ],
    );
    const failures = errorLines(fixture).filter((line) =>
      /settling a checkout session failed/.test(line.msg),
    );
    assert.deepEqual(
      failures.map((line) => line.sessionId),
      [rows[0]?.id],
    );
  });
});
