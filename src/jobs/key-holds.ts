import { sql } from 'kysely';
import type { Db } from '../db/schema.ts';

/**
 * How long a concurrency key is held back after `failures` failures in a row; 0 for no hold.
 * The caller decides (a webhook receiver gets a few failures before its deliveries wait).
 */
export type KeyBackoff = (failures: number) => number;

/**
 * Records the outcome of a job of `key`, in the caller's transaction: a success forgets the
 * key's failures (a delete that usually finds nothing, so a healthy key costs no row lock); a
 * failure counts one more and holds the key's queued jobs back until `now + backoff(failures)`.
 * Jobs running already finish; the claim skips the key until the hold ends.
 */
export async function noteKeyOutcome(
  db: Db,
  key: string,
  outcome: { succeeded: boolean; now: Date; backoff: KeyBackoff },
): Promise<void> {
  if (outcome.succeeded) return releaseKey(db, key);
  const now = outcome.now.getTime();
  const { failures } = await db
    .insertInto('job_key_holds')
    .values({ concurrency_key: key, failures: 1, held_until: null, updated_at: now })
    .onConflict((oc) =>
      oc
        .column('concurrency_key')
        .doUpdateSet({ failures: sql`job_key_holds.failures + 1`, updated_at: now }),
    )
    .returning('failures')
    .executeTakeFirstOrThrow();
  const holdMs = outcome.backoff(failures);
  if (holdMs > 0) {
    await db
      .updateTable('job_key_holds')
      .set({ held_until: now + holdMs })
      .where('concurrency_key', '=', key)
      .execute();
  }
}

/** Forgets the key's failures and ends its hold (its jobs start afresh, e.g. a receiver re-enabled). */
export async function releaseKey(db: Db, key: string): Promise<void> {
  await db.deleteFrom('job_key_holds').where('concurrency_key', '=', key).execute();
}
