import { sql } from 'kysely';
import { preparedRowQuery } from '../db/prepared.ts';
import { inTransaction } from '../db/transaction.ts';
import { recordPurchase, resumePurchase } from '../purchase/index.ts';
import { isEmailAddress } from '../shared/email.ts';
import { sha256Hex } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import {
  attemptKey,
  buyerColumns,
  CHANGED_MEANWHILE,
  type Channel,
  type CheckoutDeps,
  type CheckoutError,
  type CheckoutSession,
  changesAfter,
  claimedAttempt,
  findRow,
  guardedWrite,
  isOpen,
  itemFor,
  type Row,
  type SessionBuyer,
  type SettledOutcome,
  TRANSITION_TRIES,
  toSession,
} from './rows.ts';
import { getSession } from './sessions.ts';

/**
 * Pays for the session with a shared payment token through the purchase pipeline. The payment
 * first claims the session (`ready` to `paying`, the next attempt number) and records the attempt
 * for the item of the version it claimed, both in one transaction; from then on update and cancel
 * are refused until the attempt's outcome is applied. A declined or refused attempt returns the
 * session to `ready`, so another token may be tried; a session is charged at most once.
 *
 * A `buyer` sent with the payment replaces the session's in the claim's own write. A request
 * answers with its own token's outcome: finding another token's attempt under way it finishes
 * that attempt, and if that one was declined it then pays with its own token.
 */
export async function completeSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
  token: string,
  buyer?: SessionBuyer,
): Promise<Result<CheckoutSession, CheckoutError>> {
  if (buyer && !isEmailAddress(buyer.email)) return err({ code: 'invalid_email' });
  for (let tries = 0; tries < TRANSITION_TRIES; tries++) {
    const row = await findRow(deps.db, publicId, channel);
    if (!row) return err({ code: 'not_found' });
    if (row.status === 'paying') {
      const finished = await finishPayment(deps, publicId, row, token);
      if (finished === PAY_AGAIN) continue;
      return finished;
    }
    const session = await toSession(deps, publicId, row);
    if (!isOpen(session.status)) return err({ code: 'not_modifiable', session });
    const payer = buyer ?? session.buyer;
    if (!payer) return err({ code: 'missing_buyer_email', session });
    await deps.purchases.failpoints?.hit('before_claim');
    const claimed = await claimPayment(deps, row, payer, token);
    if (!claimed.ok) return claimed;
    if (!claimed.value) continue;
    await deps.purchases.failpoints?.hit('after_claim');
    const finished = await finishPayment(deps, publicId, claimed.value.row, token, claimed.value.attempt);
    if (finished !== PAY_AGAIN) return finished;
  }
  return err(CHANGED_MEANWHILE);
}

/** An attempt as purchase recorded it in the claim, passed on to be charged without reading it again. */
type RecordedAttempt = Extract<Awaited<ReturnType<typeof recordPurchase>>, { kind: 'recorded' }>['attempt'];

/**
 * The claim: one guarded write moves the session read as `row` to `paying` under the next attempt
 * number (with the buyer paying), and the attempt is recorded for that row's item and this buyer
 * in the same transaction, so a session is never `paying` without an attempt. Answers the row as
 * written and the attempt as recorded; undefined if another request changed the session first.
 */
async function claimPayment(
  deps: CheckoutDeps,
  row: Row,
  buyer: SessionBuyer,
  token: string,
): Promise<Result<{ row: Row; attempt: RecordedAttempt } | undefined, CheckoutError>> {
  const item = itemFor(row.item_id);
  if (!item.ok) return item;
  const attemptNumber = row.attempt_count + 1;
  return inTransaction(deps.db, async (trx) => {
    const claimed = await guardedWrite(
      deps,
      row,
      {
        status: 'paying',
        attempt_count: attemptNumber,
        ...buyerColumns(buyer),
        payment_error_code: null,
        payment_error_message: null,
      },
      trx,
    );
    if (!claimed) return ok(undefined);
    const recorded = await recordPurchase(trx, deps.clock.now(), {
      attemptKey: attemptKey(row, attemptNumber),
      channel: row.channel,
      itemId: item.value.id,
      buyer: { email: buyer.email, name: buyerName(buyer), companyName: buyer.companyName },
      token,
    });
    if (recorded.kind === 'rejected') {
      throw new Error(
        `session ${row.id} claimed attempt ${attemptNumber} but it was rejected: ${recorded.code}`,
      );
    }
    return ok({ row: claimed, attempt: recorded.attempt });
  });
}

/** The claimed attempt was another token's and was declined: the request pays with its own. */
const PAY_AGAIN = Symbol('pay again');

/**
 * Charges (or replays) the attempt the session claimed and applies its outcome to the session.
 * The answer is the outcome for `token`: the attempt's own if it pays with that token; otherwise
 * the session completed by another token is not modifiable, and another token's decline means
 * this request may claim the session for its own token (`PAY_AGAIN`). A request that has just
 * claimed the session passes the attempt it recorded (with its own token), which is not read again.
 */
async function finishPayment(
  deps: CheckoutDeps,
  publicId: string,
  row: Row,
  token: string,
  recorded?: RecordedAttempt,
): Promise<Result<CheckoutSession, CheckoutError> | typeof PAY_AGAIN> {
  const ownAttempt = recorded ? true : (await claimedAttempt(deps, row)).tokenHash === sha256Hex(token);
  const outcome = await resumePurchase(deps.purchases, recorded ?? attemptKey(row, row.attempt_count));
  if (!outcome) throw new Error(`attempt ${row.attempt_count} of session ${row.id} vanished`);
  switch (outcome.kind) {
    case 'completed': {
      await deps.purchases.failpoints?.hit('before_session_settled');
      const session = await toSession(deps, publicId, await applyOutcome(deps, row, outcome), {
        order: outcome.order,
      });
      return ownAttempt ? ok(session) : err({ code: 'not_modifiable', session });
    }
    case 'declined':
    case 'failed': {
      await deps.purchases.failpoints?.hit('before_session_settled');
      const left = await applyOutcome(deps, row, outcome);
      if (!ownAttempt) return PAY_AGAIN;
      if (outcome.kind === 'failed') return err({ code: 'payment_failed', message: outcome.message });
      return ok(await toSession(deps, publicId, left));
    }
    case 'needs_review': {
      const current = await getSession(deps, publicId, row.channel);
      if (!current.ok) return current;
      return err({ code: 'payment_under_review', session: current.value });
    }
    case 'in_progress':
    case 'payment_unknown':
    case 'setup_pending':
      return err({ code: 'busy', retryAfterSeconds: outcome.retryAfterSeconds });
    case 'rejected':
      throw new Error(
        `resuming attempt ${row.attempt_count} of session ${row.id} was rejected: ${outcome.code}`,
      );
  }
}

const writeIfPaying = preparedRowQuery(
  (db, { payingId, attemptCount, ...changes }: Partial<Row> & { payingId: string; attemptCount: number }) =>
    db
      .updateTable('checkout_sessions')
      .set({ ...changes, version: sql`version + 1` })
      .where('id', '=', payingId)
      .where('status', '=', 'paying')
      .where('attempt_count', '=', attemptCount)
      .returningAll(),
);

/**
 * Applies the outcome of the attempt the session claimed, in one write conditional on the session
 * still paying that attempt, and returns the session as that outcome left it. Only this write
 * leaves `paying`, so when it finds nothing to change a concurrent request (or the sweep) applied
 * the outcome first: the session is completed with this order, or, after a decline, has moved on
 * from this attempt (it is then returned as the decline left it, not as it is now, so the request
 * that made the attempt answers with its own outcome). Anything else is a bug and fails loudly
 * instead of being skipped.
 */
export async function applyOutcome(deps: CheckoutDeps, row: Row, outcome: SettledOutcome): Promise<Row> {
  const changes = changesAfter(outcome);
  const {
    rows: [written],
  } = await writeIfPaying(deps.db, {
    ...changes,
    updated_at: deps.clock.now().getTime(),
    payingId: row.id,
    attemptCount: row.attempt_count,
  });
  if (written) return written;
  const current = await deps.db
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('id', '=', row.id)
    .executeTakeFirst();
  const appliedBefore =
    outcome.kind === 'completed'
      ? current?.status === 'completed' && current.order_id === outcome.order.id
      : current !== undefined && current.attempt_count >= row.attempt_count;
  if (!current || !appliedBefore) {
    throw new Error(
      `session ${row.id} left attempt ${row.attempt_count} without its outcome (${outcome.kind})`,
    );
  }
  return outcome.kind === 'completed' ? current : { ...row, ...changes };
}

function buyerName(buyer: SessionBuyer): string | undefined {
  if (buyer.fullName) return buyer.fullName;
  const joined = [buyer.firstName, buyer.lastName].filter(Boolean).join(' ');
  return joined || undefined;
}
