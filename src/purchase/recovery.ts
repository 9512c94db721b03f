import { findPendingAttemptsRecordedBefore, findUnfinishedAttempts } from './attempts.ts';
import { IDEMPOTENCY_WINDOW_MS, type PurchaseDeps, resumePurchase } from './pipeline.ts';

/** A request that is still running gets this long to finish before recovery steps in. */
const GRACE_MS = 30_000;

/**
 * Finishes purchases that a crash or a lost provider response left between charge and
 * provisioning: asks the provider again under the attempt's own key (a replay, never a second
 * charge), then provisions. Attempts still pending past the provider's idempotency window are
 * set aside for review instead (logged at error level). Safe to run on every instance at once.
 */
export async function recoverUnfinishedPurchases(deps: PurchaseDeps, batchSize = 50): Promise<number> {
  const now = deps.clock.now().getTime();
  const unfinished = await findUnfinishedAttempts(
    deps.db,
    { now, untouchedSince: now - GRACE_MS, createdSince: now - IDEMPOTENCY_WINDOW_MS },
    batchSize,
  );
  const pastWindow = await findPendingAttemptsRecordedBefore(
    deps.db,
    { now, recordedBefore: now - IDEMPOTENCY_WINDOW_MS },
    batchSize,
  );
  let finished = 0;
  for (const attempt of [...unfinished, ...pastWindow]) {
    try {
      const outcome = await resumePurchase(deps, attempt.attempt_key);
      if (outcome && !STILL_OPEN.has(outcome.kind)) finished++;
    } catch (error) {
      deps.logger.error({ err: error, attemptId: attempt.id }, 'recovering a purchase failed');
    }
  }
  return finished;
}

const STILL_OPEN = new Set(['payment_unknown', 'in_progress', 'needs_review']);
