import type { Db } from '../../db/schema.ts';
import type { ModuleWiring } from '../../jobs/index.ts';
import { type Clock, MINUTE_MS } from '../../shared/clock.ts';
import { deleteOldClaims } from './store.ts';

export function mppWiring(deps: { db: Db; clock: Clock }): ModuleWiring {
  return {
    sweeps: [
      {
        name: 'mpp.delete-old-claims',
        intervalMs: 60 * MINUTE_MS,
        run: async () => void (await deleteOldClaims(deps.db, deps.clock.now().getTime())),
      },
    ],
  };
}
