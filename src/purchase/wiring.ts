import type { Db } from '../db/schema.ts';
import type { JobLogger, ModuleWiring } from '../jobs/index.ts';
import type { Clock } from '../shared/clock.ts';
import type { PurchaseDeps } from './pipeline.ts';
import {
  advanceFollowedOrders,
  NOTIFY_ORDER_JOB,
  type NotifyOrderPayload,
  type OrderFollower,
} from './progress.ts';
import { recoverUnfinishedPurchases } from './recovery.ts';

/** The recovery of purchases a crash left unfinished. */
export function purchaseWiring(purchases: PurchaseDeps, log: JobLogger): ModuleWiring {
  return {
    sweeps: [
      {
        name: 'purchase.recover-unfinished',
        intervalMs: 30_000,
        run: async () => {
          const finished = await recoverUnfinishedPurchases(purchases);
          if (finished > 0) log.warn({ count: finished }, 'recovered unfinished purchases');
        },
      },
    ],
  };
}

/** Tells one protocol's agent where an order stands; `eventId` is the same on every retry. */
export type OrderNotifier = (orderId: string, eventId: string) => Promise<void>;

/**
 * Following orders: the sweep moving each followed order to its current state, and the job telling
 * the follower (each protocol channel brings its notifier). List it after the term-end sweep, which
 * changes what an order's state is read from, so one round of sweeps tells the agents.
 */
export function orderFollowingWiring(deps: {
  db: Db;
  clock: Clock;
  notifiers: Record<OrderFollower, OrderNotifier>;
}): ModuleWiring {
  return {
    jobs: {
      [NOTIFY_ORDER_JOB]: {
        async run(payload, context) {
          const { orderId, follower } = payload as NotifyOrderPayload;
          await deps.notifiers[follower](orderId, `evt_${context.jobId}`);
        },
      },
    },
    sweeps: [
      {
        name: 'orders.advance-followed',
        intervalMs: 5_000,
        run: async () => void (await advanceFollowedOrders(deps.db, deps.clock)),
      },
    ],
  };
}
