import type { Db } from '../db/schema.ts';
import { type Clock, DAY_MS } from '../shared/clock.ts';

/** Events (with their deliveries and attempts) are kept this long once every delivery has finished. */
export const EVENT_RETENTION_MS = 30 * DAY_MS;
const BATCH = 500;

/**
 * The periodic clean-up: drops old secrets whose grace period is over, and deletes events older
 * than the retention whose deliveries are all finished (their deliveries and attempts go with
 * them). An event with a delivery still pending stays until it finishes. Returns how many events.
 */
export async function sweepWebhookData(db: Db, clock: Clock): Promise<number> {
  const now = clock.now().getTime();
  await db
    .updateTable('webhook_subscriptions')
    .set({ previous_secret: null, previous_secret_expires_at: null })
    .where('previous_secret_expires_at', '<=', now)
    .execute();
  let deleted = 0;
  for (;;) {
    const result = await db
      .deleteFrom('webhook_events')
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('webhook_events as e')
          .select('e.id')
          .where('e.created_at', '<=', now - EVENT_RETENTION_MS)
          .where(({ not, exists, selectFrom }) =>
            not(
              exists(
                selectFrom('webhook_deliveries as d')
                  .select('d.id')
                  .whereRef('d.event_id', '=', 'e.id')
                  .where('d.status', '=', 'pending'),
              ),
            ),
          )
          .limit(BATCH),
      )
      .executeTakeFirst();
    deleted += Number(result.numDeletedRows);
    if (result.numDeletedRows < BigInt(BATCH)) return deleted;
  }
}
