import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { enqueueJob } from '../jobs/index.ts';
import type { Clock } from '../shared/clock.ts';
import { findPurchaseFollowUp } from '../workspace/index.ts';
import { findOrder } from './attempts.ts';
import { type Order, toOrder } from './pipeline.ts';
import type { OrderFollowersTable } from './purchase.table.ts';

/**
 * Where an order stands, from what happened and nothing else: `placed` once paid (the workspace
 * exists and the owner invitation is emailed in the same transaction), `invitation_accepted` once
 * the buyer (or whoever the invitation was resent to) joined as owner, `term_ended` once the
 * term-end sweep closed the term it paid for.
 */
export type OrderState = OrderFollowersTable['state'];

export interface OrderEvent {
  type: 'workspace_created' | 'invitation_sent' | 'invitation_accepted' | 'term_ended';
  at: Date;
}

export interface OrderProgress {
  order: Order;
  state: OrderState;
  invitationAccepted: boolean;
  /** What happened, oldest first; an event never changes once it is listed. */
  events: OrderEvent[];
}

export async function orderProgress(db: Db, orderId: string): Promise<OrderProgress | undefined> {
  const row = await findOrder(db, orderId);
  return row ? progressOf(db, toOrder(row)) : undefined;
}

/** Where `order` stands, for a caller that already holds it (an order never changes once written). */
export async function progressOf(db: Db, order: Order): Promise<OrderProgress> {
  const facts = await findPurchaseFollowUp(db, order.workspaceId, order.id);
  const events: OrderEvent[] = [{ type: 'workspace_created', at: order.createdAt }];
  if (facts.invitationSentAt) events.push({ type: 'invitation_sent', at: facts.invitationSentAt });
  if (facts.invitationAcceptedAt)
    events.push({ type: 'invitation_accepted', at: facts.invitationAcceptedAt });
  if (facts.termEndedAt) events.push({ type: 'term_ended', at: facts.termEndedAt });
  const state: OrderState = facts.termEndedAt
    ? 'term_ended'
    : facts.invitationAcceptedAt
      ? 'invitation_accepted'
      : 'placed';
  return { order, state, invitationAccepted: facts.invitationAcceptedAt !== null, events };
}

/** The job that tells a protocol's agent an order's current state (defined by the channel). */
export const NOTIFY_ORDER_JOB = 'order.notify';

export type OrderFollower = 'ucp' | 'acp';

export interface NotifyOrderPayload {
  orderId: string;
  follower: OrderFollower;
  state: OrderState;
}

function notifyJob(db: Db, now: Date, payload: NotifyOrderPayload) {
  return enqueueJob(db, now, {
    kind: NOTIFY_ORDER_JOB,
    payload,
    dedupeKey: `${NOTIFY_ORDER_JOB}:${payload.orderId}:${payload.follower}:${payload.state}`,
    // Order webhooks retry for about a day, like the workspace's.
    maxAttempts: 16,
  });
}

/** From now on `follower`'s agent is told each state of the order, starting with `placed`. */
export async function followOrder(db: Db, now: Date, order: Order, follower: OrderFollower): Promise<void> {
  await inTransaction(db, async (trx) => {
    const inserted = await trx
      .insertInto('order_followers')
      .values({
        order_id: order.id,
        follower,
        state: 'placed',
        term_ends_at: order.termEndsAt.getTime(),
        created_at: now.getTime(),
        updated_at: now.getTime(),
      })
      .onConflict((oc) => oc.columns(['order_id', 'follower']).doNothing())
      .executeTakeFirst();
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) > 0n) {
      await notifyJob(trx, now, { orderId: order.id, follower, state: 'placed' });
    }
  });
}

/**
 * Looks again at followed orders that can still move (awaiting acceptance, or accepted with their
 * term over), longest-unlooked first, and queues a notice for each that did. One conditional
 * update per order, so instances running it together notify once.
 */
export async function advanceFollowedOrders(db: Db, clock: Clock, batchSize = 100): Promise<number> {
  const now = clock.now();
  const at = now.getTime();
  const due = await db
    .selectFrom('order_followers')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('state', '=', 'placed'),
        eb.and([eb('state', '=', 'invitation_accepted'), eb('term_ends_at', '<=', at)]),
      ]),
    )
    .orderBy('updated_at')
    .limit(batchSize)
    .execute();
  let moved = 0;
  for (const row of due) {
    const progress = await orderProgress(db, row.order_id);
    const state = progress?.state ?? row.state;
    await inTransaction(db, async (trx) => {
      const updated = await trx
        .updateTable('order_followers')
        .set({ state, updated_at: at })
        .where('order_id', '=', row.order_id)
        .where('follower', '=', row.follower)
        .where('state', '=', row.state)
        .executeTakeFirst();
      if (updated.numUpdatedRows === 1n && state !== row.state) {
        moved++;
        await notifyJob(trx, now, { orderId: row.order_id, follower: row.follower as OrderFollower, state });
      }
    });
  }
  return moved;
}
