import type { ModuleWiring } from '../jobs/index.ts';
import { MINUTE_MS } from '../shared/clock.ts';
import type { CheckoutDeps } from './rows.ts';
import { expireSessions, settleSessions } from './sweeps.ts';

/**
 * Settling claimed sessions and expiring open ones. List it after `purchaseWiring`: a session
 * whose payment the recovery finished then takes its outcome in the same round of sweeps.
 */
export function checkoutWiring(checkout: CheckoutDeps): ModuleWiring {
  return {
    sweeps: [
      {
        name: 'checkout.settle-sessions',
        intervalMs: 30_000,
        run: async () => void (await settleSessions(checkout)),
      },
      {
        name: 'checkout.expire-sessions',
        intervalMs: MINUTE_MS,
        run: async () => void (await expireSessions(checkout)),
      },
    ],
  };
}
