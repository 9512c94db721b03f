export type { JobStatus } from './jobs.table.ts';
export { type KeyBackoff, noteKeyOutcome, releaseKey } from './key-holds.ts';
export {
  type EnqueueOptions,
  enqueueJob,
  type JobContext,
  type JobDefinition,
  type JobLogger,
  JobRunner,
  type JobRunnerOptions,
  type Sweep,
  type Timers,
} from './runner.ts';
export { combineWiring, jobsWiring, type ModuleWiring } from './wiring.ts';
