import type { ModuleWiring } from '../jobs/index.ts';
import { MINUTE_MS } from '../shared/clock.ts';
import { type BuildDeps, buildPackageJob } from './build.ts';
import { BUILD_PACKAGE_JOB, sweepPackages } from './packages.ts';
import type { PackageWorkerConfig } from './worker.ts';

/**
 * The build job (in worker threads when `worker` says what they open, else in this thread) and
 * the sweep expiring packages.
 */
export function evidencePackageWiring(deps: BuildDeps, worker?: PackageWorkerConfig): ModuleWiring {
  const builds = buildPackageJob(deps, worker);
  return {
    jobs: { [BUILD_PACKAGE_JOB]: builds },
    sweeps: [
      {
        name: 'evidence-package.sweep',
        intervalMs: 15 * MINUTE_MS,
        run: async () => {
          const swept = await sweepPackages(deps);
          if (swept.expired > 0)
            deps.log.info({ event: 'evidence_package.expired', ...swept }, 'evidence packages expired');
        },
      },
    ],
    stop: () => builds.stop(),
  };
}
