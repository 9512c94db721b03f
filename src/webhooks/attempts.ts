import type { Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { noteKeyOutcome } from '../jobs/index.ts';
import { queueMail, renderWebhookDisabled } from '../mail/index.ts';
import { MINUTE_MS } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import type { DeliveryDeps, DueDelivery } from './context.ts';
import { endpointKey, queueAttempt } from './events.ts';
import type { OutboundResult } from './outbound.ts';
import { endpointBackoffMs, nextRetryDelay, retryAfterMs } from './schedule.ts';
import type { DeliveryStatus, FailureReason } from './webhooks.table.ts';

export interface AttemptRecord {
  attempt: number;
  startedAt: Date;
  result: OutboundResult;
}

interface Verdict {
  status: DeliveryStatus;
  /** When the next attempt runs; null when the delivery is finished. */
  nextAt: number | null;
  /** 410 Gone: the receiver asks us to stop for good. */
  gone: boolean;
}

/** Only a 2xx is success; 410 stops everything; anything else is retried on the schedule. */
function judge(record: AttemptRecord, now: Date): Verdict {
  const code = record.result.statusCode;
  if (code !== null && code >= 200 && code < 300) return { status: 'succeeded', nextAt: null, gone: false };
  if (code === 410) return { status: 'failed', nextAt: null, gone: true };
  const delay = nextRetryDelay(record.attempt, retryAfterMs(record.result.retryAfter, now));
  if (delay === null) return { status: 'failed', nextAt: null, gone: false };
  return { status: 'pending', nextAt: now.getTime() + delay, gone: false };
}

/**
 * Records one attempt, moves the delivery on (finished, or its next attempt queued as a job at
 * its time) and keeps the subscription's health, in one transaction; once it commits, a failed
 * attempt and a disabled subscription are logged (ids, status and error, never the URL).
 */
export async function recordAttempt(
  deps: DeliveryDeps,
  due: DueDelivery,
  record: AttemptRecord,
): Promise<void> {
  const now = deps.clock.now();
  const verdict = judge(record, now);
  const outcome = await inTransaction(deps.db, async (trx) => {
    if (!(await saveAttempt(trx, due.id, record, verdict, now))) return { recorded: false } as const;
    await keepHealth(trx, due.subscriptionId, verdict.status === 'succeeded', record.startedAt, now);
    await noteKeyOutcome(trx, endpointKey(due.subscriptionId), {
      succeeded: verdict.status === 'succeeded',
      now,
      backoff: endpointBackoffMs,
    });
    let disabled: FailureReason | undefined;
    if (verdict.nextAt !== null) {
      const next = { deliveryId: due.id, attempt: record.attempt + 1 };
      await queueAttempt(trx, now, next, due.subscriptionId, new Date(verdict.nextAt));
    } else if (verdict.gone) {
      if (await disableSubscription(deps, trx, due, 'gone', record.result)) disabled = 'gone';
    } else if (verdict.status === 'failed' && (await failedThroughout(trx, due))) {
      if (await disableSubscription(deps, trx, due, 'failing', record.result)) disabled = 'failing';
    }
    return { recorded: true, disabled } as const;
  });
  if (!outcome.recorded || verdict.status === 'succeeded') return;
  const ids = { subscriptionId: due.subscriptionId, workspaceId: due.workspaceId, deliveryId: due.id };
  deps.logger.warn(
    {
      event: 'webhook.attempt_failed',
      ...ids,
      eventId: due.eventId,
      attempt: record.attempt,
      status: record.result.statusCode,
      error: record.result.error?.slice(0, 200) ?? null,
      nextAttemptAt: verdict.nextAt === null ? null : new Date(verdict.nextAt).toISOString(),
    },
    'webhook delivery attempt failed',
  );
  if (outcome.disabled) {
    deps.logger.warn(
      { event: 'webhook.disabled', ...ids, reason: outcome.disabled },
      'webhook subscription disabled',
    );
  }
}

/**
 * Moves the delivery past the attempt and stores the attempt; false when this attempt was
 * recorded already (a job re-run), which the condition on `attempt_count` detects.
 */
async function saveAttempt(
  trx: Tx,
  deliveryId: string,
  { attempt, startedAt, result }: AttemptRecord,
  verdict: Verdict,
  now: Date,
): Promise<boolean> {
  const moved = await trx
    .updateTable('webhook_deliveries')
    .set({
      status: verdict.status,
      attempt_count: attempt,
      next_attempt_at: verdict.nextAt,
      last_status_code: result.statusCode,
      last_error: result.error,
      updated_at: now.getTime(),
      finished_at: verdict.status === 'pending' ? null : now.getTime(),
    })
    .where('id', '=', deliveryId)
    .where('status', '=', 'pending')
    .where('attempt_count', '=', attempt - 1)
    .executeTakeFirst();
  if (moved.numUpdatedRows === 0n) return false;
  await trx
    .insertInto('webhook_attempts')
    .values({
      id: newId('wha', startedAt),
      delivery_id: deliveryId,
      attempt_number: attempt,
      started_at: startedAt.getTime(),
      duration_ms: result.durationMs,
      status_code: result.statusCode,
      error: result.error,
      response_excerpt: result.excerpt,
    })
    .execute();
  return true;
}

/**
 * `failing_since` is the first failure after the last success. `last_success_at` is kept to the
 * minute: a busy healthy subscription costs one write a minute, not one per delivery (every
 * delivery of a subscription would otherwise queue on its row).
 */
async function keepHealth(trx: Tx, subscriptionId: string, succeeded: boolean, startedAt: Date, now: Date) {
  const subscription = trx.updateTable('webhook_subscriptions').where('id', '=', subscriptionId);
  if (succeeded) {
    await subscription
      .set({ failing_since: null, last_success_at: now.getTime() })
      .where((eb) =>
        eb.or([
          eb('failing_since', 'is not', null),
          eb('last_success_at', 'is', null),
          eb('last_success_at', '<=', now.getTime() - MINUTE_MS),
        ]),
      )
      .execute();
  } else {
    await subscription
      .set({ failing_since: startedAt.getTime() })
      .where('failing_since', 'is', null)
      .execute();
  }
}

/**
 * A delivery that used its whole schedule (about a day) disables the subscription only when no
 * attempt to it succeeded since this delivery's first attempt: it has been failing throughout.
 */
async function failedThroughout(trx: Tx, due: DueDelivery): Promise<boolean> {
  const subscription = await trx
    .selectFrom('webhook_subscriptions')
    .select('failing_since')
    .where('id', '=', due.subscriptionId)
    .executeTakeFirstOrThrow();
  const first = await trx
    .selectFrom('webhook_attempts')
    .select('started_at')
    .where('delivery_id', '=', due.id)
    .where('attempt_number', '=', 1)
    .executeTakeFirst();
  return (
    subscription.failing_since !== null &&
    first !== undefined &&
    subscription.failing_since <= first.started_at
  );
}

/**
 * Disables the subscription (once) and, in the same transaction, queues the email to the owner;
 * false when it was disabled already.
 */
async function disableSubscription(
  deps: DeliveryDeps,
  trx: Tx,
  due: DueDelivery,
  reason: FailureReason,
  result: OutboundResult,
): Promise<boolean> {
  const now = deps.clock.now();
  const disabled = await trx
    .updateTable('webhook_subscriptions')
    .set({ status: 'disabled', disabled_reason: reason, updated_at: now.getTime() })
    .where('id', '=', due.subscriptionId)
    .where('status', '=', 'enabled')
    .executeTakeFirst();
  if (disabled.numUpdatedRows === 0n) return false;
  const owner = await deps.findOwner(trx, due.workspaceId);
  if (!owner) return true;
  const lastFailure = result.error ?? `HTTP ${result.statusCode}`;
  const mail = renderWebhookDisabled({
    workspaceName: owner.workspaceName,
    subscriptionId: due.subscriptionId,
    url: due.url,
    reason,
    lastFailure,
    manageUrl: `${deps.baseUrl}/api/v1/hooks/${due.subscriptionId}`,
  });
  await queueMail(trx, deps.clock, owner.email, mail, { workspaceId: due.workspaceId });
  return true;
}
