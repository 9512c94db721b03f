import type { Tx } from '../db/schema.ts';
import { enqueueJob } from '../jobs/index.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { ALL_EVENTS, type EventType } from './catalog.ts';

export const DELIVER_WEBHOOK_JOB = 'webhook.deliver';

/** What every delivery of an event sends, byte for byte. */
export interface EventEnvelope<Data = unknown> {
  id: string;
  type: EventType;
  created_at: string;
  workspace_id: string;
  data: Data;
}

export interface NewEvent {
  workspaceId: string;
  type: EventType;
  data: unknown;
}

/** The job that makes one delivery attempt; `attempt` is 1 for the first. */
export interface DeliverWebhookPayload {
  deliveryId: string;
  attempt: number;
}

/**
 * Records an event in the outbox, in the caller's transaction, with one delivery (and its first
 * attempt job) per enabled subscription of the workspace that wants the type. If the change rolls
 * back, the event and its deliveries do too; if it commits, every delivery is attempted.
 */
export async function publishEvent(trx: Tx, clock: Clock, event: NewEvent): Promise<EventEnvelope> {
  const now = clock.now();
  const envelope = await recordEvent(trx, now, event);
  const subscriptions = await trx
    .selectFrom('webhook_subscriptions')
    .select(['id', 'event_types'])
    .where('workspace_id', '=', event.workspaceId)
    .where('status', '=', 'enabled')
    .execute();
  for (const subscription of subscriptions) {
    const wanted = JSON.parse(subscription.event_types) as string[];
    if (wanted.includes(ALL_EVENTS) || wanted.includes(event.type)) {
      await queueDelivery(trx, now, envelope.id, subscription.id, event.workspaceId);
    }
  }
  return envelope;
}

/** Writes an event to the outbox without delivering it anywhere; `publishEvent` fans it out. */
export async function recordEvent(trx: Tx, now: Date, event: NewEvent): Promise<EventEnvelope> {
  const envelope: EventEnvelope = {
    id: newId('evt', now),
    type: event.type,
    created_at: now.toISOString(),
    workspace_id: event.workspaceId,
    data: event.data,
  };
  await trx
    .insertInto('webhook_events')
    .values({
      id: envelope.id,
      workspace_id: event.workspaceId,
      type: event.type,
      payload: JSON.stringify(envelope),
      created_at: now.getTime(),
    })
    .execute();
  return envelope;
}

/** A delivery of a recorded event to one subscription, with the job for its first attempt. */
export async function queueDelivery(
  trx: Tx,
  now: Date,
  eventId: string,
  subscriptionId: string,
  workspaceId: string,
): Promise<string> {
  const deliveryId = newId('whd', now);
  await trx
    .insertInto('webhook_deliveries')
    .values({
      id: deliveryId,
      event_id: eventId,
      subscription_id: subscriptionId,
      workspace_id: workspaceId,
      status: 'pending',
      attempt_count: 0,
      next_attempt_at: now.getTime(),
      last_status_code: null,
      last_error: null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
      finished_at: null,
    })
    .execute();
  await queueAttempt(trx, now, { deliveryId, attempt: 1 }, subscriptionId, now);
  return deliveryId;
}

/** The concurrency key of a subscription's jobs: its receiver's share of the runner (see schedule.ts). */
export function endpointKey(subscriptionId: string): string {
  return `webhook:${subscriptionId}`;
}

/**
 * The job for one attempt, due at `runAt`. The dedupe key makes queueing the same attempt twice
 * keep one job; the runner's own retries (5) only cover infrastructure failures. The job carries
 * its subscription's concurrency key, so one receiver's backlog takes a bounded share of the
 * runner and waits out its receiver's backoff without holding up other receivers.
 */
export async function queueAttempt(
  trx: Tx,
  now: Date,
  payload: DeliverWebhookPayload,
  subscriptionId: string,
  runAt: Date,
): Promise<void> {
  await enqueueJob(trx, now, {
    kind: DELIVER_WEBHOOK_JOB,
    payload,
    runAt,
    maxAttempts: 5,
    dedupeKey: `webhook:${payload.deliveryId}:${payload.attempt}`,
    concurrencyKey: endpointKey(subscriptionId),
  });
}
