import type { Db } from '../db/schema.ts';
import type { JobLogger, ModuleWiring } from '../jobs/index.ts';
import { type Clock, MINUTE_MS } from '../shared/clock.ts';
import { endElapsedTerms } from './service.ts';
import { sendDueTermReminders } from './term-notices.ts';

/** The term-end sweep and the term-end reminders, each logged per term. */
export function workspaceWiring(deps: {
  db: Db;
  clock: Clock;
  baseUrl: string;
  log: JobLogger;
}): ModuleWiring {
  const { db, clock, baseUrl, log } = deps;
  return {
    sweeps: [
      {
        name: 'workspace.end-elapsed-terms',
        intervalMs: MINUTE_MS,
        run: async () => {
          for (const term of await endElapsedTerms(db, { clock, baseUrl })) {
            log.info(
              {
                event: 'term.ended',
                workspaceId: term.workspaceId,
                orderId: term.orderId,
                plan: term.plan,
                planNow: term.planNow,
                ownersNotified: term.ownersNotified,
                subscriptionsPaused: term.subscriptionsPaused.length,
              },
              'term ended',
            );
          }
        },
      },
      {
        name: 'workspace.term-reminders',
        intervalMs: 15 * MINUTE_MS,
        run: async () => {
          for (const notice of await sendDueTermReminders(db, { clock, baseUrl })) {
            log.info({ event: 'term.reminder_queued', ...notice }, 'term end reminder queued');
          }
        },
      },
    ],
  };
}
