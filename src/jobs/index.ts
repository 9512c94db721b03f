export type { JobStatus } from './jobs.table.ts';
export {
  deleteFinishedJobs,
  type EnqueueOptions,
  enqueueJob,
  type JobContext,
  type JobDefinition,
  type JobLogger,
  JobRunner,
  type Sweep,
  type Timers,
} from './runner.ts';
