import { HOUR_MS } from '../shared/clock.ts';
import { findUnfinishedAttempts } from './attempts.ts';
import { type PurchaseDeps, resumePurchase } from './pipeline.ts';

/** A request that is still running gets this long to finish before recovery steps in. */
const GRACE_MS = 30_000;
/**
 * The provider keeps idempotency keys for at least 24 hours; past that, asking again under the
 * same key could charge anew, so older unfinished attempts are left for a person to review.
 */
const IDEMPOTENCY_WINDOW_MS = 23 * HOUR_MS;

/**
 * Finishes purchases that a crash or a lost provider response left between charge and
 * provisioning: asks the provider again under the attempt's own key (a replay, never a second
 * charge), then provisions. Safe to run on every instance at once.
 */
export async function recoverUnfinishedPurchases(deps: PurchaseDeps, batchSize = 50): Promise<number> {
  const now = deps.clock.now().getTime();
  const attempts = await findUnfinishedAttempts(
    deps.db,
    { now, untouchedSince: now - GRACE_MS, createdSince: now - IDEMPOTENCY_WINDOW_MS },
    batchSize,
  );
  let finished = 0;
  for (const attempt of attempts) {
    try {
      const outcome = await resumePurchase(deps, attempt.attempt_key);
      if (outcome && outcome.kind !== 'payment_unknown' && outcome.kind !== 'in_progress') finished++;
    } catch (error) {
      deps.logger.error({ err: error, attemptId: attempt.id }, 'recovering a purchase failed');
    }
  }
  return finished;
}
