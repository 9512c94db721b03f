import type { Insertable } from 'kysely';
import { preparedRowQuery } from '../db/prepared.ts';
import { HOUR_MS } from '../shared/clock.ts';
import { isEmailAddress } from '../shared/email.ts';
import { newId, newSecret, sha256Hex } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import type { CheckoutSessionsTable } from './checkout.table.ts';
import {
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
  TRANSITION_TRIES,
  toSession,
} from './rows.ts';

export const SESSION_LIFETIME_MS = HOUR_MS;

const PAYMENT_UNDER_WAY: CheckoutError = { code: 'busy', retryAfterSeconds: 2 };

const insertSession = preparedRowQuery((db, row: Insertable<CheckoutSessionsTable>) =>
  db.insertInto('checkout_sessions').values(row).returningAll(),
);

export async function createSession(
  deps: CheckoutDeps,
  input: { channel: Channel; itemId: string; buyer?: SessionBuyer },
): Promise<Result<CheckoutSession, CheckoutError>> {
  const item = itemFor(input.itemId);
  if (!item.ok) return item;
  if (input.buyer && !isEmailAddress(input.buyer.email)) return err({ code: 'invalid_email' });
  const now = deps.clock.now();
  const publicId = newSecret('cs_');
  const { rows } = await insertSession(deps.db, {
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
  });
  const row = rows[0];
  if (!row) throw new Error('a new checkout session was not returned');
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
  const order = outcome.kind === 'completed' ? outcome.order : undefined;
  return ok(await toSession(deps, publicId, applied, { order }));
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
    await deps.purchases.failpoints?.hit('before_session_write');
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
