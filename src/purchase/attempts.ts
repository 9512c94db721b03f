import type { Insertable, Selectable } from 'kysely';
import type { CatalogItem } from '../catalog/index.ts';
import { insertRow, type Param, preparedQuery, preparedRowQuery } from '../db/prepared.ts';
import type { Db, Tx } from '../db/schema.ts';
import { heartbeatsFreshSince, holderGone, type InstanceLiveness } from '../instances/index.ts';
import { newId, sha256Hex } from '../shared/ids.ts';
import type { OrdersTable, PaymentAttemptsTable } from './purchase.table.ts';

export type Attempt = Selectable<PaymentAttemptsTable>;
export type OrderRow = Selectable<OrdersTable>;

export interface NewAttempt {
  attemptKey: string;
  channel: string;
  item: CatalogItem;
  buyer: { email: string; name?: string; companyName?: string };
  token: string;
}

const insertAttempt = preparedRowQuery((db, row: Insertable<PaymentAttemptsTable>) =>
  db
    .insertInto('payment_attempts')
    .values(row)
    .onConflict((oc) => oc.column('attempt_key').doNothing())
    .returningAll(),
);

/** Records the attempt, or returns the one already recorded under the same key. */
export async function recordAttempt(db: Db, at: Date, input: NewAttempt): Promise<Attempt> {
  const id = newId('pa', at);
  const { rows } = await insertAttempt(db, {
    id,
    attempt_key: input.attemptKey,
    channel: input.channel,
    item_id: input.item.id,
    plan: input.item.price.plan,
    term: input.item.price.term,
    amount: input.item.price.amount,
    currency: input.item.price.currency,
    buyer_email: input.buyer.email,
    buyer_name: input.buyer.name ?? null,
    company_name: input.buyer.companyName ?? null,
    token_hash: sha256Hex(input.token),
    token: input.token,
    order_id: newId('ord', at),
    // Deterministic per attempt: every retry of this attempt, from any instance, reuses it.
    psp_idempotency_key: `svc_${id}`,
    status: 'pending',
    locked_until: null,
    locked_by: null,
    payment_intent_id: null,
    charged_at: null,
    decline_code: null,
    decline_message: null,
    last_error: null,
    created_at: at.getTime(),
    updated_at: at.getTime(),
  });
  const attempt = rows[0] ?? (await findAttemptByKey(db, input.attemptKey));
  if (!attempt) throw new Error(`payment attempt ${input.attemptKey} vanished after insert`);
  return attempt;
}

export function findAttemptByKey(db: Db, attemptKey: string): Promise<Attempt | undefined> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('attempt_key', '=', attemptKey)
    .executeTakeFirst();
}

export function findAttempt(db: Db, id: string): Promise<Attempt | undefined> {
  return db.selectFrom('payment_attempts').selectAll().where('id', '=', id).executeTakeFirst();
}

type ChargeLease = { id: string; now: number; until: number; holder: string | null };

function chargeLeaseQuery(db: Db, param: Param<ChargeLease & { freshSince: number }>, takeOver: boolean) {
  return db
    .updateTable('payment_attempts')
    .set({ locked_until: param('until'), locked_by: param('holder'), updated_at: param('now') })
    .where('id', '=', param('id'))
    .where('status', '=', 'pending')
    .where((eb) =>
      eb.or([
        eb('locked_until', 'is', null),
        eb('locked_until', '<=', param('now')),
        ...(takeOver ? [holderGone('payment_attempts.locked_by', param('freshSince'))] : []),
      ]),
    );
}

const leaseCharge = preparedQuery((db, param: Param<ChargeLease>) => chargeLeaseQuery(db, param, false));
const leaseChargeOrTakeOver = preparedQuery((db, param: Param<ChargeLease & { freshSince: number }>) =>
  chargeLeaseQuery(db, param, true),
);

/**
 * Takes the right to call the provider for this attempt until `until`; false if someone holds it.
 * A lease held by an instance known gone is taken over at once: the attempt's provider
 * idempotency key makes the second call a replay of the first, never a second charge.
 */
export async function claimCharge(
  db: Db,
  attemptId: string,
  lease: { now: number; until: number; instance: InstanceLiveness | undefined },
): Promise<boolean> {
  const { now, until, instance } = lease;
  const values = { id: attemptId, now, until, holder: instance?.id ?? null };
  const result = instance
    ? await leaseChargeOrTakeOver(db, { ...values, freshSince: heartbeatsFreshSince(instance.goneAfterMs) })
    : await leaseCharge(db, values);
  return result.numAffectedRows === 1n;
}

type PendingUpdate = Partial<
  Pick<
    PaymentAttemptsTable,
    | 'status'
    | 'payment_intent_id'
    | 'charged_at'
    | 'decline_code'
    | 'decline_message'
    | 'last_error'
    | 'token'
  >
>;

const updatePending = preparedRowQuery(
  (db, { pendingId, ...changes }: PendingUpdate & { pendingId: string; updated_at: number }) =>
    db
      .updateTable('payment_attempts')
      .set({ ...changes, locked_until: null, locked_by: null })
      .where('id', '=', pendingId)
      .where('status', '=', 'pending')
      .returningAll(),
);

/**
 * Moves a pending attempt on and returns it as written; undefined (a no-op) if another request
 * already did.
 */
export async function updatePendingAttempt(
  db: Db,
  attemptId: string,
  now: number,
  changes: PendingUpdate,
): Promise<Attempt | undefined> {
  const { rows } = await updatePending(db, { ...changes, updated_at: now, pendingId: attemptId });
  return rows[0];
}

const completeCharged = preparedQuery((db, param: Param<{ id: string; now: number }>) =>
  db
    .updateTable('payment_attempts')
    .set({ status: 'completed', updated_at: param('now') })
    .where('id', '=', param('id'))
    .where('status', '=', 'charged'),
);

/** Marks a charged attempt completed inside the provisioning transaction; false if already done. */
export async function claimProvisioning(trx: Tx, attemptId: string, now: number): Promise<boolean> {
  const result = await completeCharged(trx, { id: attemptId, now });
  return result.numAffectedRows === 1n;
}

export async function insertOrder(trx: Tx, order: OrderRow): Promise<void> {
  await insertRow(trx, 'orders', order);
}

const orderById = preparedQuery((db, param: Param<{ id: string }>) =>
  db.selectFrom('orders').selectAll().where('id', '=', param('id')),
);

export async function findOrder(db: Db, orderId: string): Promise<OrderRow | undefined> {
  const { rows } = await orderById(db, { id: orderId });
  return rows[0];
}

/**
 * Attempts a request left unfinished (a crash, a lost provider response) that recovery should
 * finish: charged ones of any age (provisioning asks nothing of the provider), pending ones only
 * while the provider still knows their idempotency key.
 */
export function findUnfinishedAttempts(
  db: Db,
  window: { now: number; untouchedSince: number; createdSince: number },
  limit: number,
): Promise<Attempt[]> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('status', '=', 'charged'),
        eb.and([eb('status', '=', 'pending'), eb('created_at', '>=', window.createdSince)]),
      ]),
    )
    .where('updated_at', '<=', window.untouchedSince)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', window.now)]))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** Pending attempts recorded before `recordedBefore` that no request is charging now. */
export function findPendingAttemptsRecordedBefore(
  db: Db,
  at: { now: number; recordedBefore: number },
  limit: number,
): Promise<Attempt[]> {
  return db
    .selectFrom('payment_attempts')
    .selectAll()
    .where('status', '=', 'pending')
    .where('created_at', '<', at.recordedBefore)
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', at.now)]))
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/**
 * Sets a pending attempt aside for a person to settle, erasing its token so nothing can charge it
 * again; false if it is not pending or a request is charging it right now.
 */
export async function setAsideForReview(db: Db, attemptId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('payment_attempts')
    .set({ status: 'needs_review', token: null, updated_at: now })
    .where('id', '=', attemptId)
    .where('status', '=', 'pending')
    .where((eb) => eb.or([eb('locked_until', 'is', null), eb('locked_until', '<=', now)]))
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}
