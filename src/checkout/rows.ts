import type { Selectable } from 'kysely';
import { type CatalogItem, findSellableItem } from '../catalog/index.ts';
import { type Param, preparedQuery, preparedRowQuery } from '../db/prepared.ts';
import type { Db } from '../db/schema.ts';
import { attemptState, type Order, type PurchaseDeps } from '../purchase/index.ts';
import type { Clock } from '../shared/clock.ts';
import { sha256Hex } from '../shared/ids.ts';
import { err, type Result } from '../shared/result.ts';
import type { CheckoutSessionsTable, SessionStatus } from './checkout.table.ts';

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

export type Row = Selectable<CheckoutSessionsTable>;

export const OPEN_STATUSES: SessionStatus[] = ['not_ready', 'ready'];
/** How often a transition reads again after another request changed the session under it. */
export const TRANSITION_TRIES = 3;
export const CHANGED_MEANWHILE: CheckoutError = { code: 'conflict', retryAfterSeconds: 1 };
/** Shown on a `paying` session whose payment is still unknown past the provider's window. */
export const UNDER_REVIEW = {
  code: 'payment_under_review',
  message:
    'The payment provider did not confirm this payment in time, so it will not be tried again; a person is reviewing it, and the checkout completes if the payment went through. Nothing more will be charged.',
};

export function itemFor(itemId: string): Result<CatalogItem, CheckoutError> {
  const found = findSellableItem(itemId);
  if (found.ok) return found;
  const message = found.error.code === 'unknown_item' ? `No item ${itemId} is for sale.` : found.error.reason;
  return err({ code: found.error.code, itemId, message });
}

export function buyerColumns(buyer: SessionBuyer | null) {
  return {
    buyer_email: buyer?.email ?? null,
    buyer_first_name: buyer?.firstName ?? null,
    buyer_last_name: buyer?.lastName ?? null,
    buyer_full_name: buyer?.fullName ?? null,
    buyer_phone_number: buyer?.phoneNumber ?? null,
    company_name: buyer?.companyName ?? null,
  };
}

export function isOpen(status: SessionStatus): boolean {
  return status === 'not_ready' || status === 'ready';
}

const sessionByIdHash = preparedQuery((db, param: Param<{ idHash: string; channel: Channel }>) =>
  db
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('id_hash', '=', param('idHash'))
    .where('channel', '=', param('channel')),
);

export async function findRow(db: Db, publicId: string, channel: Channel): Promise<Row | undefined> {
  const { rows } = await sessionByIdHash(db, { idHash: sha256Hex(publicId), channel });
  return rows[0];
}

type SessionChanges = Partial<Omit<Row, 'id' | 'id_hash' | 'version'>>;

const writeIfStillOpen = preparedRowQuery(
  (
    db,
    {
      readId,
      readVersion,
      openAt,
      ...changes
    }: SessionChanges & {
      version: number;
      updated_at: number;
      readId: string;
      readVersion: number;
      openAt: number;
    },
  ) =>
    db
      .updateTable('checkout_sessions')
      .set(changes)
      .where('id', '=', readId)
      .where('version', '=', readVersion)
      .where('status', 'in', OPEN_STATUSES)
      .where('expires_at', '>', openAt)
      .returningAll(),
);

/** Writes `changes` if the session is still the open one read as `row`; undefined if not. */
export async function guardedWrite(
  deps: CheckoutDeps,
  row: Row,
  changes: SessionChanges,
  trx: Db = deps.db,
): Promise<Row | undefined> {
  const now = deps.clock.now().getTime();
  const { rows } = await writeIfStillOpen(trx, {
    ...changes,
    version: row.version + 1,
    updated_at: now,
    readId: row.id,
    readVersion: row.version,
    openAt: now,
  });
  return rows[0];
}

/** The key of the session's attempt number `attemptNumber`, under which purchase records it. */
export function attemptKey(row: Row, attemptNumber: number): string {
  return `${row.channel}:${row.id}:${attemptNumber}`;
}

/**
 * What purchase knows of the attempt the session claimed last (its status, token, the end of the
 * provider's idempotency window and, once settled, its outcome), read without acting on it.
 */
export async function claimedAttempt(deps: CheckoutDeps, row: Row) {
  const attempt = await attemptState(deps.db, attemptKey(row, row.attempt_count));
  if (!attempt) {
    throw new Error(`session ${row.id} is at attempt ${row.attempt_count}, which was never recorded`);
  }
  return attempt;
}

export type ClaimedAttempt = Awaited<ReturnType<typeof claimedAttempt>>;
/** How a payment ended for good: completed, declined or failed. */
export type SettledOutcome = NonNullable<ClaimedAttempt['settled']>;

/** What a settled payment makes of the session that claimed it. */
export function changesAfter(outcome: SettledOutcome): Partial<Row> {
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

/** The status a row stands at `now`: an open session past its hour is expired, swept or not. */
function statusAt(row: Row, now: number): SessionStatus {
  return isOpen(row.status) && now >= row.expires_at ? 'expired' : row.status;
}

interface SessionExtras {
  /** The order, when the caller has it already. */
  order?: Order;
  /** The claimed attempt of a `paying` session. */
  attempt?: ClaimedAttempt;
}

export async function toSession(
  deps: CheckoutDeps,
  publicId: string,
  row: Row,
  extras: SessionExtras = {},
): Promise<CheckoutSession> {
  const item = findSellableItem(row.item_id);
  if (!item.ok) throw new Error(`session ${row.id} holds an item that is no longer sold: ${row.item_id}`);
  const order = extras.order ?? (await orderOf(deps, row));
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

/** A completed session's order: the outcome of the attempt that completed it, its last claimed. */
async function orderOf(deps: CheckoutDeps, row: Row): Promise<Order | null> {
  if (row.order_id === null) return null;
  const outcome = (await claimedAttempt(deps, row)).settled;
  if (outcome?.kind !== 'completed' || outcome.order.id !== row.order_id) {
    throw new Error(`session ${row.id} holds order ${row.order_id}, which its last attempt did not complete`);
  }
  return outcome.order;
}

/** Why the last payment did not go through; for a `paying` session, that a person reviews it. */
function paymentErrorOf(row: Row, attempt: ClaimedAttempt | undefined): CheckoutSession['paymentError'] {
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
function expiresAt(row: Row, attempt: ClaimedAttempt | undefined): number {
  if (row.status !== 'paying' || !attempt) return row.expires_at;
  return Math.max(row.expires_at, attempt.windowEndsAt.getTime());
}
