import { sql } from 'kysely';
import { applyOutcome } from './completing.ts';
import {
  attemptKey,
  type CheckoutDeps,
  claimedAttempt,
  OPEN_STATUSES,
  type Row,
  UNDER_REVIEW,
} from './rows.ts';

/**
 * Applies settled payments to the sessions that claimed them, where the request that paid did
 * not (it crashed, or the recovery sweep finished the purchase). Runs after that sweep. A session
 * whose payment is still unknown past the provider's idempotency window is marked for review and
 * logged once at error level. One session failing is logged and does not stop the others.
 */
export async function settleSessions(deps: CheckoutDeps, pageSize = 200): Promise<number> {
  let settled = 0;
  let after = '';
  for (;;) {
    const paying = await deps.db
      .selectFrom('checkout_sessions')
      .selectAll()
      .where('status', '=', 'paying')
      .where('id', '>', after)
      .orderBy('id')
      .limit(pageSize)
      .execute();
    for (const row of paying) {
      try {
        if (await settleSession(deps, row)) settled++;
      } catch (error) {
        deps.purchases.logger.error({ err: error, sessionId: row.id }, 'settling a checkout session failed');
      }
    }
    const last = paying.at(-1);
    if (!last || paying.length < pageSize) return settled;
    after = last.id;
  }
}

async function settleSession(deps: CheckoutDeps, row: Row): Promise<boolean> {
  const attempt = await claimedAttempt(deps, row);
  if (attempt.settled) {
    await applyOutcome(deps, row, attempt.settled);
    return true;
  }
  const pastWindow = attempt.windowEndsAt.getTime() <= deps.clock.now().getTime();
  if ((pastWindow || attempt.status === 'needs_review') && row.payment_error_code === null) {
    const marked = await deps.db
      .updateTable('checkout_sessions')
      .set({
        payment_error_code: UNDER_REVIEW.code,
        payment_error_message: UNDER_REVIEW.message,
        version: sql`version + 1`,
        updated_at: deps.clock.now().getTime(),
      })
      .where('id', '=', row.id)
      .where('status', '=', 'paying')
      .where('attempt_count', '=', row.attempt_count)
      .where('payment_error_code', 'is', null)
      .executeTakeFirst();
    if (marked.numUpdatedRows === 1n) {
      deps.purchases.logger.error(
        { sessionId: row.id, attemptKey: attemptKey(row, row.attempt_count), attemptStatus: attempt.status },
        'checkout session stuck in paying past the provider idempotency window; needs review',
      );
    }
  }
  return false;
}

/** Writes the expiry of open sessions past their hour (reads already show them expired). */
export async function expireSessions(deps: CheckoutDeps, batchSize = 200): Promise<number> {
  const now = deps.clock.now().getTime();
  const result = await deps.db
    .updateTable('checkout_sessions')
    .set({ status: 'expired', version: sql`version + 1`, updated_at: now })
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('checkout_sessions')
        .select('id')
        .where('status', 'in', OPEN_STATUSES)
        .where('expires_at', '<=', now)
        .limit(batchSize),
    )
    .where('status', 'in', OPEN_STATUSES)
    .where('expires_at', '<=', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
