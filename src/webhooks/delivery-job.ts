import { performance } from 'node:perf_hooks';
import type { Db } from '../db/schema.ts';
import type { JobDefinition } from '../jobs/index.ts';
import type { Clock } from '../shared/clock.ts';
import { recordAttempt } from './attempts.ts';
import type { DeliverWebhookPayload } from './events.ts';
import { type OutboundResult, postPinned } from './outbound.ts';
import { signatureHeader, signingSecrets } from './signing.ts';
import { checkTarget, type TargetPolicy } from './target.ts';
import type { SubscriptionStatus } from './webhooks.table.ts';

/** Resolving the host, connecting, sending and reading the answer of one attempt must fit in this. */
export const DELIVERY_TIMEOUT_MS = 10_000;
const USER_AGENT = 'svc-webhooks/1';

export interface DeliveryDeps {
  db: Db;
  clock: Clock;
  targets: TargetPolicy;
  timeoutMs: number;
  /** For the links in the email that tells the owner a subscription was disabled. */
  baseUrl: string;
  logger: { warn(object: object, message: string): void };
  /** Whom to tell when a subscription is disabled (the workspace module knows). */
  findOwner(db: Db, workspaceId: string): Promise<{ email: string; workspaceName: string } | undefined>;
}

/** A pending delivery whose next attempt is the one a job asks for, with what sending it needs. */
export interface DueDelivery {
  id: string;
  workspaceId: string;
  subscriptionId: string;
  eventId: string;
  payload: string;
  url: string;
  subscriptionStatus: SubscriptionStatus;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
}

async function findDueDelivery(
  db: Db,
  deliveryId: string,
  attempt: number,
): Promise<DueDelivery | undefined> {
  const row = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_subscriptions as s', 's.id', 'd.subscription_id')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .select([
      'd.id',
      'd.workspace_id as workspaceId',
      'd.subscription_id as subscriptionId',
      'd.event_id as eventId',
      'd.status',
      'd.attempt_count',
      'e.payload',
      's.url',
      's.status as subscriptionStatus',
      's.secret',
      's.previous_secret',
      's.previous_secret_expires_at',
    ])
    .where('d.id', '=', deliveryId)
    .executeTakeFirst();
  // Gone (deleted with its subscription), finished, or this attempt was recorded before a crash
  // ended the job (its successor is queued already): nothing to send.
  if (row?.status !== 'pending' || row.attempt_count !== attempt - 1) return undefined;
  return row;
}

/**
 * Checks the target again (DNS may have changed since subscribing), signs, and POSTs once; the
 * check and the POST share the one timeout, and the attempt's duration counts both.
 */
async function send(deps: DeliveryDeps, due: DueDelivery, startedAt: Date): Promise<OutboundResult> {
  const began = performance.now();
  const target = await checkTarget(due.url, deps.targets);
  const checkMs = Math.round(performance.now() - began);
  if (!target.ok) {
    const error = `not sent: the URL ${target.error.message}`;
    return { statusCode: null, error, excerpt: null, retryAfter: null, durationMs: checkMs };
  }
  const timestamp = Math.floor(startedAt.getTime() / 1000);
  const signature = signatureHeader(signingSecrets(due, startedAt), due.eventId, timestamp, due.payload);
  const result = await postPinned({
    target: target.value,
    headers: {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      'webhook-id': due.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signature,
    },
    body: due.payload,
    timeoutMs: Math.max(1, deps.timeoutMs - checkMs),
  });
  return { ...result, durationMs: result.durationMs + checkMs };
}

async function closeDelivery(
  deps: DeliveryDeps,
  deliveryId: string,
  status: 'cancelled' | 'failed',
  reason: string,
): Promise<void> {
  const now = deps.clock.now().getTime();
  await deps.db
    .updateTable('webhook_deliveries')
    .set({ status, last_error: reason, next_attempt_at: null, finished_at: now, updated_at: now })
    .where('id', '=', deliveryId)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * The `webhook.deliver` job: one attempt of one delivery. Sending happens outside any
 * transaction; recording the attempt and queueing the next one (a new job at its time) commit
 * together, so a worker that dies before recording sends again (same `webhook-id`) and one that
 * dies after never records twice. The runner's own retries only cover infrastructure failures.
 */
export function deliverWebhookJob(deps: DeliveryDeps): JobDefinition {
  return {
    async run(payload) {
      const { deliveryId, attempt } = payload as DeliverWebhookPayload;
      const due = await findDueDelivery(deps.db, deliveryId, attempt);
      if (!due) return;
      if (due.subscriptionStatus !== 'enabled') {
        await closeDelivery(deps, deliveryId, 'cancelled', 'the subscription was disabled');
        return;
      }
      const startedAt = deps.clock.now();
      const result = await send(deps, due, startedAt);
      await recordAttempt(deps, due, { attempt, startedAt, result });
    },
    async onParked(payload, lastError) {
      const { deliveryId } = payload as DeliverWebhookPayload;
      await closeDelivery(deps, deliveryId, 'failed', `delivery stopped by an internal error: ${lastError}`);
    },
  };
}
