import type { JobLogger, ModuleWiring } from '../jobs/index.ts';
import { type Clock, MINUTE_MS } from '../shared/clock.ts';
import { PENDING_FILE_GRACE_MS, type SweepDeps, sweepEvidenceFiles } from './evidence-store.ts';

/** The sweep that finishes or removes evidence files no record names, and says what it left alone. */
export function complianceWiring(deps: SweepDeps & { clock: Clock; log: JobLogger }): ModuleWiring {
  const { clock, log } = deps;
  return {
    sweeps: [
      {
        name: 'evidence.sweep-orphan-files',
        intervalMs: 60 * MINUTE_MS,
        run: async () => {
          const swept = await sweepEvidenceFiles(deps, clock.now().getTime() - PENDING_FILE_GRACE_MS);
          if (swept.finalized + swept.removed > 0) {
            log.warn({ event: 'evidence.orphans_swept', ...swept }, 'evidence files swept');
          }
          if (swept.foreign + swept.unnamed > 0) {
            log.warn(
              { event: 'evidence.files_left_alone', foreign: swept.foreign, unnamed: swept.unnamed },
              'the evidence store holds files no record of this database names: of workspaces it does not have (another database shares the store) or of its own (a failed deletion, or a restored copy sharing the store); left alone',
            );
          }
        },
      },
    ],
  };
}
