import type { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';

/** How often the worker copies the log into the database. */
export const CHECKPOINT_EVERY_MS = 200;

/**
 * The log's bound, in pages (about 40 MB of 4 KB pages). Under writes that never pause the
 * worker's checkpoint never catches up with the log's end, and only a complete one lets the next
 * write start the log again; past this bound the owning connection holds its next statement until
 * the worker has completed one.
 */
export const WAL_LIMIT_PAGES = 10_000;

export interface CheckpointWorkerData {
  file: string;
  everyMs: number;
}

/**
 * What a worker's checkpoint found: pages in the log, pages of it now in the database; `asked`
 * when it answers the owner's request.
 */
export interface WalReport {
  log: number;
  copied: number;
  asked: boolean;
}

export interface Checkpoints {
  /**
   * Called by the owning connection before each use, outside any transaction: undefined while the
   * log is within its bound; past it, a promise of a checkpoint the worker runs while this
   * connection writes nothing, so that it reaches the log's end.
   */
  beforeUse(): Promise<void> | undefined;
  stop(): Promise<void>;
}

/** What the owner asks the worker: a checkpoint now (answered with its report), or to close. */
export type CheckpointRequest = 'checkpoint' | 'close';

/**
 * Keeps checkpoints off the connection that serves requests. SQLite's automatic checkpoint runs
 * inside the commit that crosses 1,000 pages, on the event loop, fsyncs included; here it is
 * turned off and a worker thread with a connection of its own runs a PASSIVE checkpoint every
 * CHECKPOINT_EVERY_MS. When the log still holds more than WAL_LIMIT_PAGES, the owning connection,
 * between its transactions, waits for one more from the worker before its next statement: with
 * no write in between, that one reaches the log's end, and the next write restarts the log, cut
 * back to the bound by `journal_size_limit`. The event loop goes on meanwhile (running that
 * checkpoint on the owning connection stalled it for its fsyncs, 6-30 ms). At close the worker's
 * connection closes first: the owner's is then the last, whose close checkpoints the log and
 * deletes it.
 */
export function startCheckpoints(db: DatabaseSync, file: string): Checkpoints {
  const pageSize = Number((db.prepare('pragma page_size').get() as { page_size: number }).page_size);
  db.exec(`pragma journal_size_limit = ${WAL_LIMIT_PAGES * pageSize}`);
  db.exec('pragma wal_autocheckpoint = 0');
  const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), {
    workerData: { file, everyMs: CHECKPOINT_EVERY_MS } satisfies CheckpointWorkerData,
  });
  let overBound = false;
  let asked: { done: Promise<void>; resolve: () => void } | undefined;
  const answered = () => {
    if (!asked) return;
    asked.resolve();
    asked = undefined;
    overBound = false;
    worker.unref();
  };
  worker.on('message', ({ log, asked: answer }: WalReport) => {
    // A report of a log copied to its end is not enough: the log restarts only if the write after
    // that copy began after it, and under steady writes one had begun already. Only the timer's
    // later reports ask again: an answer that could not reach the log's end (another process reads
    // an older snapshot) does not hold the next statement too.
    if (answer) answered();
    else overBound = log > WAL_LIMIT_PAGES;
  });
  // A worker that failed leaves SQLite's own rule in force: the log stays bounded either way.
  worker.on('error', () => {
    if (db.isOpen) db.exec('pragma wal_autocheckpoint = 1000');
  });
  // No answer comes after this, so no statement may wait for one.
  worker.on('exit', () => {
    answered();
    overBound = false;
  });
  // After the listeners: adding a 'message' listener would keep the process alive again.
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    beforeUse() {
      if (asked || !overBound) return asked?.done;
      let resolve = () => {};
      const done = new Promise<void>((settle) => {
        resolve = settle;
      });
      asked = { done, resolve };
      // Awaited by the owner: the answer must keep the process alive until it comes.
      worker.ref();
      worker.postMessage('checkpoint' satisfies CheckpointRequest);
      return done;
    },
    async stop() {
      worker.ref();
      worker.postMessage('close' satisfies CheckpointRequest);
      await exited;
    },
  };
}
