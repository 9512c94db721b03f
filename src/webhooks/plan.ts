import { SYSTEM_ACTOR } from '../audit/index.ts';
import { PLAN_ENTITLEMENTS, type PlanId } from '../catalog/index.ts';
import type { Tx } from '../db/schema.ts';
import { lockingRead } from '../db/transaction.ts';
import { releaseKey } from '../jobs/index.ts';
import type { Clock } from '../shared/clock.ts';
import { endpointKey } from './events.ts';
import { recordSubscriptionEvent } from './subscriptions.ts';

export interface PlanForSubscriptions {
  workspaceId: string;
  /** The plan the workspace is on from now: its `webhookSubscriptions` is how many may deliver. */
  plan: PlanId;
  clock: Clock;
}

/** The subscriptions a plan change paused and resumed, oldest first. */
export interface SubscriptionsPlanApplied {
  paused: string[];
  resumed: string[];
}

/**
 * Brings the workspace's delivering subscriptions within the plan, in the caller's transaction.
 * The slots go first to the subscriptions delivering now, oldest first, then to those paused
 * for the plan's limit (`disabled_reason: plan_limit`), oldest first: a move to a smaller plan
 * keeps the oldest ones and pauses the rest, a move to a larger one resumes what fits. A
 * subscription paused by a person or disabled for failing is neither counted nor resumed.
 * Pausing cancels the pending deliveries and nothing is queued while paused, so a resumed
 * subscription receives only the events published after it resumed. Running it twice changes
 * nothing the second time; each change is in the audit log (actor System). The caller holds the
 * workspace's lock (it changes the plan under it), the one a concurrent creation or resumption
 * also takes.
 */
export async function applyPlanToSubscriptions(
  trx: Tx,
  { workspaceId, plan, clock }: PlanForSubscriptions,
): Promise<SubscriptionsPlanApplied> {
  // Read locked: a pause by the user committed meanwhile is seen (and the row left alone) instead
  // of being overwritten as a pause for the plan, which a later upgrade would undo.
  const rows = await lockingRead(
    trx,
    trx
      .selectFrom('webhook_subscriptions')
      .select(['id', 'workspace_id', 'url', 'status', 'disabled_reason'])
      .where('workspace_id', '=', workspaceId)
      .where((eb) => eb.or([eb('status', '=', 'enabled'), eb('disabled_reason', '=', 'plan_limit')]))
      .orderBy('created_at')
      .orderBy('id'),
  ).execute();
  const delivering = rows.filter((row) => row.status === 'enabled');
  const waiting = rows.filter((row) => row.status !== 'enabled');
  const limit = PLAN_ENTITLEMENTS[plan].webhookSubscriptions;
  const toPause = delivering.slice(limit);
  const toResume = waiting.slice(0, Math.max(0, limit - delivering.length));
  const now = clock.now();
  const source = { actor: SYSTEM_ACTOR };
  for (const row of toPause) {
    await trx
      .updateTable('webhook_subscriptions')
      .set({ status: 'disabled', disabled_reason: 'plan_limit', updated_at: now.getTime() })
      .where('id', '=', row.id)
      .execute();
    await trx
      .updateTable('webhook_deliveries')
      .set({
        status: 'cancelled',
        last_error: "the subscription was paused: over the plan's limit",
        next_attempt_at: null,
        finished_at: now.getTime(),
        updated_at: now.getTime(),
      })
      .where('subscription_id', '=', row.id)
      .where('status', '=', 'pending')
      .execute();
    await recordSubscriptionEvent(trx, 'webhook.paused', row, source, now);
  }
  for (const row of toResume) {
    await trx
      .updateTable('webhook_subscriptions')
      .set({ status: 'enabled', disabled_reason: null, failing_since: null, updated_at: now.getTime() })
      .where('id', '=', row.id)
      .execute();
    await releaseKey(trx, endpointKey(row.id));
    await recordSubscriptionEvent(trx, 'webhook.resumed', row, source, now);
  }
  return { paused: toPause.map((row) => row.id), resumed: toResume.map((row) => row.id) };
}
