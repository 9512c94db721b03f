import type { Selectable } from 'kysely';
import { type CatalogItem, findSellableItem } from '../catalog/index.ts';
import type { Db } from '../db/schema.ts';
import {
  attemptState,
  getOrder,
  type Order,
  type PurchaseDeps,
  type PurchaseOutcome,
  purchase,
  resumePurchase,
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
  | { code: 'payment_failed'; message: string };

type Row = Selectable<CheckoutSessionsTable>;

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
  await deps.db
    .insertInto('checkout_sessions')
    .values({
      id: newId('chk', now),
      id_hash: sha256Hex(publicId),
      channel: input.channel,
      status: input.buyer ? 'ready' : 'not_ready',
      item_id: item.value.id,
      ...buyerColumns(input.buyer ?? null),
      attempt_count: 0,
      payment_error_code: null,
      payment_error_message: null,
      order_id: null,
      expires_at: now.getTime() + SESSION_LIFETIME_MS,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    })
    .execute();
  const session = await loadSession(deps, publicId, input.channel);
  return session ? ok(session) : err({ code: 'not_found' });
}

export async function getSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
): Promise<Result<CheckoutSession, CheckoutError>> {
  const session = await loadSession(deps, publicId, channel);
  return session ? ok(session) : err({ code: 'not_found' });
}

export interface SessionChanges {
  itemId?: string;
  /** Undefined leaves the buyer as is; null removes it. */
  buyer?: SessionBuyer | null;
}

/** An open session with no payment under way: the only kind update and cancel may change. */
async function loadChangeableSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
): Promise<Result<CheckoutSession, CheckoutError>> {
  const session = await loadSession(deps, publicId, channel);
  if (!session) return err({ code: 'not_found' });
  if (!isOpen(session.status)) return err({ code: 'not_modifiable', session });
  if ((await hasPaymentUnderway(deps, session)) !== undefined)
    return err({ code: 'busy', retryAfterSeconds: 2 });
  return ok(session);
}

/** Changes the plan or the buyer of an open session; the price follows the catalog. */
export async function updateSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
  changes: SessionChanges,
): Promise<Result<CheckoutSession, CheckoutError>> {
  const open = await loadChangeableSession(deps, publicId, channel);
  if (!open.ok) return open;
  const session = open.value;
  const itemId = changes.itemId ?? session.item.id;
  const item = itemFor(itemId);
  if (!item.ok) return item;
  const buyer = changes.buyer === undefined ? session.buyer : changes.buyer;
  if (buyer && !isEmailAddress(buyer.email)) return err({ code: 'invalid_email' });
  await deps.db
    .updateTable('checkout_sessions')
    .set({
      item_id: item.value.id,
      ...buyerColumns(buyer),
      status: buyer ? 'ready' : 'not_ready',
      updated_at: deps.clock.now().getTime(),
    })
    .where('id_hash', '=', sha256Hex(publicId))
    .where('status', 'in', ['not_ready', 'ready'])
    .execute();
  return getSession(deps, publicId, channel);
}

export async function cancelSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
): Promise<Result<CheckoutSession, CheckoutError>> {
  const open = await loadChangeableSession(deps, publicId, channel);
  if (!open.ok) return open;
  await setStatus(deps, publicId, ['not_ready', 'ready'], { status: 'canceled' });
  return getSession(deps, publicId, channel);
}

/**
 * Pays for the session with a shared payment token through the purchase pipeline. Each payment
 * attempt has its own key, so a declined token can be followed by another; an attempt whose
 * outcome is not known yet is finished before a new one may start, so a session is charged once.
 */
export async function completeSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
  token: string,
): Promise<Result<CheckoutSession, CheckoutError>> {
  const session = await loadSession(deps, publicId, channel);
  if (!session) return err({ code: 'not_found' });
  if (!isOpen(session.status)) return err({ code: 'not_modifiable', session });
  if (!session.buyer) return err({ code: 'missing_buyer_email', session });

  const row = await findRow(deps.db, publicId, channel);
  if (!row) return err({ code: 'not_found' });
  const unresolved = await hasPaymentUnderway(deps, session);
  if (unresolved) {
    // Finish the earlier payment (a replay under its own key) before any new one may start.
    const resumed = await resumePurchase(deps.purchases, unresolved);
    if (resumed) return applyOutcome(deps, publicId, channel, resumed);
  }
  const attemptNumber = await nextAttemptNumber(deps, row);
  if (!attemptNumber.ok) return attemptNumber;
  const outcome = await purchase(deps.purchases, {
    attemptKey: attemptKey(row, attemptNumber.value),
    channel,
    itemId: session.item.id,
    buyer: {
      email: session.buyer.email,
      name: buyerName(session.buyer),
      companyName: session.buyer.companyName,
    },
    token,
  });
  return applyOutcome(deps, publicId, channel, outcome);
}

async function applyOutcome(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
  outcome: PurchaseOutcome,
): Promise<Result<CheckoutSession, CheckoutError>> {
  const now = deps.clock.now().getTime();
  switch (outcome.kind) {
    case 'completed':
      await markCompleted(deps, publicId, outcome.order.id);
      return getSession(deps, publicId, channel);
    case 'declined':
      await deps.db
        .updateTable('checkout_sessions')
        .set({ payment_error_code: outcome.code, payment_error_message: outcome.message, updated_at: now })
        .where('id_hash', '=', sha256Hex(publicId))
        .where('status', '=', 'ready')
        .execute();
      return getSession(deps, publicId, channel);
    case 'in_progress':
    case 'payment_unknown':
    case 'setup_pending':
      return err({ code: 'busy', retryAfterSeconds: outcome.retryAfterSeconds });
    case 'failed':
      return err({ code: 'payment_failed', message: outcome.message });
    case 'rejected':
      // The item was valid when the attempt was recorded; a conflict means a racing attempt.
      return err({ code: 'busy', retryAfterSeconds: 1 });
  }
}

/**
 * The attempt number this payment uses: the latest one if nothing was recorded under it yet, the
 * next one if the latest was declined. An attempt still pending or charged blocks a new one.
 */
async function nextAttemptNumber(deps: CheckoutDeps, row: Row): Promise<Result<number, CheckoutError>> {
  const latest = row.attempt_count;
  if (latest > 0) {
    const state = await attemptState(deps.db, attemptKey(row, latest));
    if (state === undefined) return ok(latest);
    if (state !== 'declined' && state !== 'failed') return err({ code: 'busy', retryAfterSeconds: 2 });
  }
  const claimed = await deps.db
    .updateTable('checkout_sessions')
    .set({ attempt_count: latest + 1, payment_error_code: null, payment_error_message: null })
    .where('id', '=', row.id)
    .where('attempt_count', '=', latest)
    .executeTakeFirst();
  if (claimed.numUpdatedRows !== 1n) return err({ code: 'busy', retryAfterSeconds: 1 });
  return ok(latest + 1);
}

function attemptKey(row: Row, attemptNumber: number): string {
  return `${row.channel}:${row.id}:${attemptNumber}`;
}

/** The latest attempt if its outcome is still open (pending or charged). */
async function hasPaymentUnderway(deps: CheckoutDeps, session: CheckoutSession): Promise<string | undefined> {
  const row = await findRow(deps.db, session.id, session.channel);
  if (!row || row.attempt_count === 0) return undefined;
  const key = attemptKey(row, row.attempt_count);
  const state = await attemptState(deps.db, key);
  return state === 'pending' || state === 'charged' ? key : undefined;
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

async function setStatus(
  deps: CheckoutDeps,
  publicId: string,
  from: SessionStatus[],
  changes: Partial<CheckoutSessionsTable>,
): Promise<void> {
  await deps.db
    .updateTable('checkout_sessions')
    .set({ ...changes, updated_at: deps.clock.now().getTime() })
    .where('id_hash', '=', sha256Hex(publicId))
    .where('status', 'in', from)
    .execute();
}

/** A completed session keeps its order and forgets the buyer. */
async function markCompleted(deps: CheckoutDeps, publicId: string, orderId: string): Promise<void> {
  await setStatus(deps, publicId, ['not_ready', 'ready', 'expired'], {
    status: 'completed',
    order_id: orderId,
    ...buyerColumns(null),
    payment_error_code: null,
    payment_error_message: null,
  });
}

/**
 * Reads a session and brings it up to date first: a payment the recovery job (or another
 * instance) finished completes it, a charged-but-unprovisioned one is finished now, and an open
 * session past its hour with no payment under way expires.
 */
async function loadSession(
  deps: CheckoutDeps,
  publicId: string,
  channel: Channel,
): Promise<CheckoutSession | undefined> {
  let row = await findRow(deps.db, publicId, channel);
  if (!row) return undefined;
  if (row.status !== 'completed' && row.status !== 'canceled' && row.attempt_count > 0) {
    const key = attemptKey(row, row.attempt_count);
    const state = await attemptState(deps.db, key);
    if (state === 'charged' || state === 'completed') {
      const outcome = await resumePurchase(deps.purchases, key);
      if (outcome?.kind === 'completed') await markCompleted(deps, publicId, outcome.order.id);
    }
    row = (await findRow(deps.db, publicId, channel)) ?? row;
  }
  if (isOpen(row.status) && deps.clock.now().getTime() >= row.expires_at) {
    const underway =
      row.attempt_count > 0 && (await attemptState(deps.db, attemptKey(row, row.attempt_count)));
    if (underway !== 'pending') {
      await setStatus(deps, publicId, ['not_ready', 'ready'], { status: 'expired' });
      row = (await findRow(deps.db, publicId, channel)) ?? row;
    }
  }
  return toSession(deps, publicId, row);
}

async function toSession(deps: CheckoutDeps, publicId: string, row: Row): Promise<CheckoutSession> {
  const item = findSellableItem(row.item_id);
  if (!item.ok) throw new Error(`session ${row.id} holds an item that is no longer sold: ${row.item_id}`);
  const order = row.order_id ? ((await getOrder(deps.db, row.order_id)) ?? null) : null;
  return {
    id: publicId,
    channel: row.channel,
    status: row.status,
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
    paymentError:
      row.payment_error_code === null
        ? null
        : { code: row.payment_error_code, message: row.payment_error_message ?? '' },
    order,
    expiresAt: new Date(row.expires_at),
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

function buyerName(buyer: SessionBuyer): string | undefined {
  if (buyer.fullName) return buyer.fullName;
  const joined = [buyer.firstName, buyer.lastName].filter(Boolean).join(' ');
  return joined || undefined;
}

/**
 * Expires open sessions past their hour (reads and writes also check). A session whose payment
 * is still pending is left for the purchase recovery to settle.
 */
export async function expireSessions(deps: CheckoutDeps, batchSize = 200): Promise<number> {
  const now = deps.clock.now().getTime();
  const due = await deps.db
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('status', 'in', ['not_ready', 'ready'])
    .where('expires_at', '<=', now)
    .limit(batchSize)
    .execute();
  let expired = 0;
  for (const row of due) {
    const state =
      row.attempt_count > 0 ? await attemptState(deps.db, attemptKey(row, row.attempt_count)) : undefined;
    if (state === 'pending' || state === 'charged' || state === 'completed') continue;
    const result = await deps.db
      .updateTable('checkout_sessions')
      .set({ status: 'expired', updated_at: now })
      .where('id', '=', row.id)
      .where('status', 'in', ['not_ready', 'ready'])
      .executeTakeFirst();
    if (result.numUpdatedRows === 1n) expired++;
  }
  return expired;
}
