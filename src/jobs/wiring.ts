import type { Db } from '../db/schema.ts';
import { type Clock, DAY_MS, MINUTE_MS } from '../shared/clock.ts';
import { deleteFinishedJobs, type JobDefinition, type Sweep } from './runner.ts';

/**
 * What a module hands the runtime: its periodic sweeps and the jobs it defines, by kind. Each
 * module builds its own from its dependencies (`accountsWiring`, `checkoutWiring`, ...); the
 * runtime lists them and gives the job runner their union.
 */
export interface ModuleWiring {
  /** Run in list order by `runSweeps`, each on its own timer otherwise. */
  sweeps?: Sweep[];
  jobs?: Record<string, JobDefinition>;
  /** Releases what the module's jobs hold beyond the runner (worker threads); awaited on close. */
  stop?(): Promise<void>;
}

/** The job runner's definitions and sweeps from the modules' wiring, in list order. */
export function combineWiring(wirings: readonly ModuleWiring[]): {
  definitions: Record<string, JobDefinition>;
  sweeps: Sweep[];
} {
  const definitions: Record<string, JobDefinition> = {};
  for (const [kind, definition] of wirings.flatMap((wiring) => Object.entries(wiring.jobs ?? {}))) {
    if (kind in definitions) throw new Error(`two modules define the job ${kind}`);
    definitions[kind] = definition;
  }
  return { definitions, sweeps: wirings.flatMap((wiring) => wiring.sweeps ?? []) };
}

/** How long a succeeded job's row is kept; parked ones stay. */
const FINISHED_JOB_RETENTION_MS = 7 * DAY_MS;

export function jobsWiring(deps: { db: Db; clock: Clock }): ModuleWiring {
  return {
    sweeps: [
      {
        name: 'jobs.delete-finished',
        intervalMs: 60 * MINUTE_MS,
        run: () =>
          deleteFinishedJobs(deps.db, new Date(deps.clock.now().getTime() - FINISHED_JOB_RETENTION_MS)),
      },
    ],
  };
}
