import type { Db } from '../db/schema.ts';
import type { ModuleWiring } from '../jobs/index.ts';
import { type Clock, MINUTE_MS } from '../shared/clock.ts';
import { deleteExpiredKeys } from './store.ts';

export function idempotencyWiring(deps: { db: Db; clock: Clock }): ModuleWiring {
  return {
    sweeps: [
      {
        name: 'idempotency.delete-expired-keys',
        intervalMs: 15 * MINUTE_MS,
        run: () => deleteExpiredKeys(deps.db, deps.clock),
      },
    ],
  };
}
