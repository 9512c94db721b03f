import { type Selectable, sql } from 'kysely';
import { type CatalogItem, findSellableItem } from '../catalog/index.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import {
  type AttemptState,
  attemptState,
  continuePurchase,
  type Failpoints,
  getOrder,
  IDEMPOTENCY_WINDOW_MS,
  noFailpoints,
  type Order,
  type PurchaseDeps,
  type PurchaseOutcome,
  type RecordedAttempt,
  recordPurchase,
  resumePurchase,
  type SettledOutcome,
} from '../purchase/index.ts';
import { type Clock, HOUR_MS } from '../shared/clock.ts';
import { isEmailAddress } from '../shared/email.ts';
import { newId, newSecret, sha256Hex } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import type { CheckoutSessionsTable, SessionStatus } from './checkout.table.ts';

export const SESSION_LIFETIME_MS = HOUR_MS;

export type Channel = 'acp' | 'ucp';

export interface CheckoutDeps {
  db: Db;
  clock: Clock;
  purchases: PurchaseDeps;
}

export interface SessionBuyer {
  email: string;
  firstName?: string;
  lastName?: string;
  fullName?: string;
  phoneNumber?: string;
  companyName?: string;
}

export interface CheckoutSession {
  /** The public id: a bearer secret, known only from the create response and the caller's URL. */
  id: string;
  channel: Channel;
  status: SessionStatus;
  item: CatalogItem;
  /** Null once completed: a completed session no longer returns buyer details. */
  buyer: SessionBuyer | null;
  paymentError: { code: string; message: string } | null;
  order: Order | null;
  expiresAt: Date;
  createdAt: Date;
  updatedAt: Date;
}

export type CheckoutError =
  | { code: 'not_found' }
  | { code: 'not_modifiable'; session: CheckoutSession }
  | { code: 'unknown_item' | 'not_sellable'; itemId: string; message: string }
  | { code: 'invalid_email' }
  | { code: 'missing_buyer_email'; session: CheckoutSession }
  /** A payment for this session is being made or its outcome is not known yet; retry later. */
  | { code: 'busy'; retryAfterSeconds: number }
  /** Other requests kept changing the session under this one; retry. */
  | { code: 'conflict'; retryAfterSeconds: number }
  | { code: 'payment_failed'; message: string }
  /** The session's payment was set aside for a person to review; nothing more will be charged. */
  | { code: 'payment_under_review'; session: CheckoutSession };

type Row = Selectable<CheckoutSessionsTable>;

const OPEN_STATUSES: SessionStatus[] = ['not_ready', 'ready'];
/** How often a transition reads again after another request changed the session under it. */
const TRANSITION_TRIES = 3;
const PAYMENT_UNDER_WAY: CheckoutError = { code: 'busy', retryAfterSeconds: 2 };
const CHANGED_MEANWHILE: CheckoutError = { code: 'conflict', retryAfterSeconds: 1 };
/** Shown on a `paying` session whose payment is still unknown past the provider's window. */
const UNDER_REVIEW = {
  code: 'payment_under_review',
  message:
    'The payment provider did not confirm this payment in time, so it will not be tried again; a person is reviewing it, and the checkout completes if the payment went through. Nothing more will be charged.',
};

function itemFor(itemId: string): Result<CatalogItem, CheckoutError> {
  const found = findSellableItem(itemId);
  if (found.ok) return found;
  const message = found.error.code === 'unknown_item' ? `No item ${itemId} is for sale.` : found.error.reason;
  return err({ code: found.error.code, itemId, message });
}

function buyerColumns(buyer: SessionBuyer | null) {
  return {
    buyer_email: buyer?.email ?? null,
    buyer_first_name: buyer?.firstName ?? null,
    buyer_last_name: buyer?.lastName ?? null,
    buyer_full_name: buyer?.fullName ?? null,
    buyer_phone_number: buyer?.phoneNumber ?? null,
    company_name: buyer?.companyName ?? null,
  };
}

export async function createSession(
  deps: CheckoutDeps,
  input: { channel: Channel; itemId: string; buyer?: SessionBuyer },
): Promise<Result<CheckoutSession, CheckoutError>> {
  const item = itemFor(input.itemId);
  if (!item.ok) return item;
  if (input.buyer && !isEmailAddress(input.buyer.email)) return err({ code: 'invalid_email' });
  const now = deps.clock.now();
  const publicId = newSecret('cs_');
  const row = await deps.db
    .insertInto('checkout_sessions')
    .values({
      id: newId('chk', now),
      id_hash: sha256Hex(publicId),
      channel: input.channel,
      status: input.buyer ? 'ready' : 'not_ready',
      item_id: item.value.id,
      ...buyerColumns(input.buyer ?? null),
      attempt_count: 0,
      version: 0,
      payment_error_code: null,
      payment_error_message: null,
      order_id: null,
      expires_at: now.getTime() + SESSION_LIFETIME_MS,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return ok(await toSession(deps, publicId, row));
}

/**
 * The session as it stands, without changing anything: an open session past its hour reads as
 * expired, and a payment whose outcome is settled but not yet applied to the session reads as
 * applied. Finishing an interrupted payment is left to a retried complete and the recovery sweep.
 */
export async function getSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
): Promise<Result<CheckoutSession, CheckoutError>> {
  const row = await findRow(deps.db, publicId, channel);
  if (!row) return err({ code: 'not_found' });
  if (row.status !== 'paying') return ok(await toSession(deps, publicId, row));
  const attempt = await claimedAttempt(deps, row);
  const outcome = attempt.settled;
  if (!outcome) return ok(await toSession(deps, publicId, row, { attempt }));
  const applied = { ...row, ...changesAfter(outcome) };
  return ok(await toSession(deps, publicId, applied, { order: orderOf(outcome) }));
}

export interface SessionChanges {
  itemId?: string;
  /** Undefined leaves the buyer as is; null removes it. */
  buyer?: SessionBuyer | null;
}

/** Changes the plan or the buyer of an open session; the price follows the catalog. */
export async function updateSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
  changes: SessionChanges,
): Promise<Result<CheckoutSession, CheckoutError>> {
  return transition(deps, publicId, channel, (row, session) => {
    const item = itemFor(changes.itemId ?? row.item_id);
    if (!item.ok) return item;
    const buyer = changes.buyer === undefined ? session.buyer : changes.buyer;
    if (buyer && !isEmailAddress(buyer.email)) return err({ code: 'invalid_email' });
    return ok({ item_id: item.value.id, ...buyerColumns(buyer), status: buyer ? 'ready' : 'not_ready' });
  });
}

/** Abandons an open session; one with a payment under way cannot be canceled until it settles. */
export async function cancelSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
): Promise<Result<CheckoutSession, CheckoutError>> {
  return transition(deps, publicId, channel, () => ok({ status: 'canceled' }));
}

type OpenSessionChanges = Partial<Pick<Row, 'item_id' | 'status' | keyof ReturnType<typeof buyerColumns>>>;

/**
 * Changes an open session in one guarded write: conditional on the version it read (so on the
 * status, item and buyer it decided from) and on the hour not having passed. If another request
 * wrote first, it reads again and decides anew; a session being paid for refuses as busy.
 */
async function transition(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
  decide: (row: Row, session: CheckoutSession) => Result<OpenSessionChanges, CheckoutError>,
): Promise<Result<CheckoutSession, CheckoutError>> {
  for (let tries = 0; tries < TRANSITION_TRIES; tries++) {
    const open = await findOpenRow(deps, publicId, channel);
    if (!open.ok) return open;
    const { row, session } = open.value;
    const changes = decide(row, session);
    if (!changes.ok) return changes;
    await failpoints(deps).hit('before_session_write');
    const written = await guardedWrite(deps, row, changes.value);
    if (written) return ok(await toSession(deps, publicId, written));
  }
  return err(CHANGED_MEANWHILE);
}

/** The session's row if it is open now; why not otherwise. */
async function findOpenRow(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
): Promise<Result<{ row: Row; session: CheckoutSession }, CheckoutError>> {
  const row = await findRow(deps.db, publicId, channel);
  if (!row) return err({ code: 'not_found' });
  if (row.status === 'paying') return err(PAYMENT_UNDER_WAY);
  const session = await toSession(deps, publicId, row);
  if (!isOpen(session.status)) return err({ code: 'not_modifiable', session });
  return ok({ row, session });
}

/** Writes `changes` if the session is still the open one read as `row`; undefined if not. */
async function guardedWrite(
  deps: CheckoutDeps,
  row: Row,
  changes: Partial<Omit<Row, 'id' | 'id_hash' | 'version'>>,
  trx: Db = deps.db,
): Promise<Row | undefined> {
  const now = deps.clock.now().getTime();
  return trx
    .updateTable('checkout_sessions')
    .set({ ...changes, version: row.version + 1, updated_at: now })
    .where('id', '=', row.id)
    .where('version', '=', row.version)
    .where('status', 'in', OPEN_STATUSES)
    .where('expires_at', '>', now)
    .returningAll()
    .executeTakeFirst();
}

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
    await failpoints(deps).hit('before_claim');
    const claimed = await claimPayment(deps, row, payer, token);
    if (!claimed.ok) return claimed;
    if (!claimed.value) continue;
    await failpoints(deps).hit('after_claim');
    const finished = await finishPayment(deps, publicId, claimed.value.row, token, claimed.value.attempt);
    if (finished !== PAY_AGAIN) return finished;
  }
  return err(CHANGED_MEANWHILE);
}

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
  const outcome = recorded
    ? await continuePurchase(deps.purchases, recorded)
    : await resumePurchase(deps.purchases, attemptKey(row, row.attempt_count));
  if (!outcome) throw new Error(`attempt ${row.attempt_count} of session ${row.id} vanished`);
  if (isSettled(outcome)) await failpoints(deps).hit('before_session_settled');
  switch (outcome.kind) {
    case 'completed': {
      const session = await toSession(deps, publicId, await applyOutcome(deps, row, outcome), {
        order: outcome.order,
      });
      return ownAttempt ? ok(session) : err({ code: 'not_modifiable', session });
    }
    case 'declined':
    case 'failed': {
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

async function claimedAttempt(deps: CheckoutDeps, row: Row): Promise<AttemptState> {
  const attempt = await attemptState(deps.db, attemptKey(row, row.attempt_count));
  if (!attempt) {
    throw new Error(`session ${row.id} is at attempt ${row.attempt_count}, which was never recorded`);
  }
  return attempt;
}

/** What a settled payment makes of the session that claimed it. */
function changesAfter(outcome: SettledOutcome): Partial<Row> {
  switch (outcome.kind) {
    case 'completed':
      // A completed session keeps its order and forgets the buyer.
      return {
        status: 'completed',
        order_id: outcome.order.id,
        ...buyerColumns(null),
        payment_error_code: null,
        payment_error_message: null,
      };
    case 'declined':
      return { status: 'ready', payment_error_code: outcome.code, payment_error_message: outcome.message };
    case 'failed':
      return {
        status: 'ready',
        payment_error_code: 'payment_failed',
        payment_error_message: outcome.message,
      };
  }
}

function isSettled(outcome: PurchaseOutcome): outcome is SettledOutcome {
  return outcome.kind === 'completed' || outcome.kind === 'declined' || outcome.kind === 'failed';
}

function orderOf(outcome: SettledOutcome): Order | undefined {
  return outcome.kind === 'completed' ? outcome.order : undefined;
}

/**
 * Applies the outcome of the attempt the session claimed, in one write conditional on the session
 * still paying that attempt, and returns the session as that outcome left it. Only this write
 * leaves `paying`, so when it finds nothing to change a concurrent request (or the sweep) applied
 * the outcome first: the session is completed with this order, or, after a decline, has moved on
 * from this attempt (it is then returned as the decline left it, not as it is now, so the request
 * that made the attempt answers with its own outcome). Anything else is a bug and fails loudly
 * instead of being skipped.
 */
async function applyOutcome(deps: CheckoutDeps, row: Row, outcome: SettledOutcome): Promise<Row> {
  const changes = changesAfter(outcome);
  const written = await deps.db
    .updateTable('checkout_sessions')
    .set({ ...changes, version: sql`version + 1`, updated_at: deps.clock.now().getTime() })
    .where('id', '=', row.id)
    .where('status', '=', 'paying')
    .where('attempt_count', '=', row.attempt_count)
    .returningAll()
    .executeTakeFirst();
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
  const pastWindow = attempt.recordedAt.getTime() <= deps.clock.now().getTime() - IDEMPOTENCY_WINDOW_MS;
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

function attemptKey(row: Row, attemptNumber: number): string {
  return `${row.channel}:${row.id}:${attemptNumber}`;
}

function isOpen(status: SessionStatus): boolean {
  return status === 'not_ready' || status === 'ready';
}

function findRow(db: Db, publicId: string, channel: Channel): Promise<Row | undefined> {
  return db
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('id_hash', '=', sha256Hex(publicId))
    .where('channel', '=', channel)
    .executeTakeFirst();
}

/** The status a row stands at `now`: an open session past its hour is expired, swept or not. */
function statusAt(row: Row, now: number): SessionStatus {
  return isOpen(row.status) && now >= row.expires_at ? 'expired' : row.status;
}

interface SessionExtras {
  /** The order, when the caller has it already. */
  order?: Order;
  /** The claimed attempt of a `paying` session. */
  attempt?: AttemptState;
}

async function toSession(
  deps: CheckoutDeps,
  publicId: string,
  row: Row,
  extras: SessionExtras = {},
): Promise<CheckoutSession> {
  const item = findSellableItem(row.item_id);
  if (!item.ok) throw new Error(`session ${row.id} holds an item that is no longer sold: ${row.item_id}`);
  const order = extras.order ?? (row.order_id ? ((await getOrder(deps.db, row.order_id)) ?? null) : null);
  return {
    id: publicId,
    channel: row.channel,
    status: statusAt(row, deps.clock.now().getTime()),
    item: item.value,
    buyer:
      row.buyer_email === null
        ? null
        : {
            email: row.buyer_email,
            ...(row.buyer_first_name ? { firstName: row.buyer_first_name } : {}),
            ...(row.buyer_last_name ? { lastName: row.buyer_last_name } : {}),
            ...(row.buyer_full_name ? { fullName: row.buyer_full_name } : {}),
            ...(row.buyer_phone_number ? { phoneNumber: row.buyer_phone_number } : {}),
            ...(row.company_name ? { companyName: row.company_name } : {}),
          },
    paymentError: paymentErrorOf(row, extras.attempt),
    order,
    expiresAt: new Date(expiresAt(row, extras.attempt)),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

/** Why the last payment did not go through; for a `paying` session, that a person reviews it. */
function paymentErrorOf(row: Row, attempt: AttemptState | undefined): CheckoutSession['paymentError'] {
  if (row.payment_error_code !== null) {
    return { code: row.payment_error_code, message: row.payment_error_message ?? '' };
  }
  return attempt?.status === 'needs_review' ? UNDER_REVIEW : null;
}

/**
 * An open session expires at the end of its hour. While it is paying it does not expire: it is
 * shown to last until its payment is settled by the service on its own at the latest, the end of
 * the provider's idempotency window for the claimed attempt.
 */
function expiresAt(row: Row, attempt: AttemptState | undefined): number {
  if (row.status !== 'paying' || !attempt) return row.expires_at;
  return Math.max(row.expires_at, attempt.recordedAt.getTime() + IDEMPOTENCY_WINDOW_MS);
}

function failpoints(deps: CheckoutDeps): Failpoints {
  return deps.purchases.failpoints ?? noFailpoints;
}

function buyerName(buyer: SessionBuyer): string | undefined {
  if (buyer.fullName) return buyer.fullName;
  const joined = [buyer.firstName, buyer.lastName].filter(Boolean).join(' ');
  return joined || undefined;
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
