import type { Generated } from 'kysely';

export type JobStatus = 'queued' | 'running' | 'succeeded' | 'parked';

export interface JobsTable {
  id: string;
  kind: string;
  /** JSON text. */
  payload: string;
  status: JobStatus;
  attempts: Generated<number>;
  max_attempts: number;
  run_at: number;
  locked_until: number | null;
  locked_by: string | null;
  last_error: string | null;
  /** Enqueueing the same dedupe key twice keeps one job. */
  dedupe_key: string | null;
  /** Jobs of one key (a webhook subscription) share its concurrency and its backoff; null: none. */
  concurrency_key: string | null;
  created_at: number;
  updated_at: number;
}

/** The recent failures of a concurrency key, and until when its jobs are held back. */
export interface JobKeyHoldsTable {
  concurrency_key: string;
  /** Failures in a row; a success deletes the row. */
  failures: number;
  held_until: number | null;
  updated_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    jobs: JobsTable;
    job_key_holds: JobKeyHoldsTable;
  }
}
