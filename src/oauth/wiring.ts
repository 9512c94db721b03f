import type { Db } from '../db/schema.ts';
import type { ModuleWiring } from '../jobs/index.ts';
import { type Clock, MINUTE_MS } from '../shared/clock.ts';
import { sweepOAuthData } from './grants.ts';

export function oauthWiring(deps: { db: Db; clock: Clock }): ModuleWiring {
  return {
    sweeps: [{ name: 'oauth.delete-expired', intervalMs: 60 * MINUTE_MS, run: () => sweepOAuthData(deps) }],
  };
}
