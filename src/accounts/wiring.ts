import type { Db } from '../db/schema.ts';
import type { ModuleWiring } from '../jobs/index.ts';
import { type Clock, MINUTE_MS } from '../shared/clock.ts';
import { SEND_ACCOUNT_LINK_JOB, sendAccountLinkJob } from './email-links.ts';
import { deleteEndedLinks } from './links.ts';
import { deleteExpiredPasskeyChallenges } from './passkey-challenges.ts';
import { deleteExpiredSessions } from './sessions.ts';
import { deleteStaleThrottles } from './throttle.ts';

/** The emailed-link job, and the sweep deleting expired sessions, throttles, links and challenges. */
export function accountsWiring(deps: { db: Db; clock: Clock; baseUrl: string }): ModuleWiring {
  const { db, clock } = deps;
  return {
    jobs: { [SEND_ACCOUNT_LINK_JOB]: sendAccountLinkJob(deps) },
    sweeps: [
      {
        name: 'accounts.delete-expired-sessions',
        intervalMs: 15 * MINUTE_MS,
        run: async () => {
          await deleteExpiredSessions(db, clock);
          await deleteStaleThrottles(db, clock.now().getTime());
          await deleteEndedLinks(db, clock);
          await deleteExpiredPasskeyChallenges(db, clock);
        },
      },
    ],
  };
}
