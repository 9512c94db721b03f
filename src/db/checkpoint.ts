import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';

/** How often the worker copies the log into the database. */
export const CHECKPOINT_EVERY_MS = 200;

/**
 * The log's bound, in pages (about 40 MB of 4 KB pages). Under writes that never pause the
 * worker's checkpoint never catches up with the log's end, and only a complete one lets the next
 * write start the log again; past this bound the owning connection completes one itself.
 */
export const WAL_LIMIT_PAGES = 10_000;

export interface CheckpointWorkerData {
  file: string;
  everyMs: number;
}

/** What a worker's checkpoint found: pages in the log, pages of it now in the database. */
export interface WalReport {
  log: number;
  copied: number;
}

export interface Checkpoints {
  stop(): Promise<void>;
}

/**
 * Keeps checkpoints off the connection that serves requests. SQLite's automatic checkpoint runs
 * inside the commit that crosses 1,000 pages, on the event loop, fsyncs included; here it is
 * turned off and a worker thread with a connection of its own runs a PASSIVE checkpoint every
 * CHECKPOINT_EVERY_MS. When the log still holds more than WAL_LIMIT_PAGES, the owning connection
 * runs a PASSIVE checkpoint between its transactions (only what the worker has not copied yet), so
 * that the next write restarts the log, cut back to the bound by `journal_size_limit`. At close the
 * worker's connection closes first: the owner's is then the last, whose close checkpoints the log
 * and deletes it.
 */
export function startCheckpoints(db: DatabaseSync, file: string): Checkpoints {
  const pageSize = Number((db.prepare('pragma page_size').get() as { page_size: number }).page_size);
  db.exec(`pragma journal_size_limit = ${WAL_LIMIT_PAGES * pageSize}`);
  db.exec('pragma wal_autocheckpoint = 0');
  let own: StatementSync | undefined;
  const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), {
    workerData: { file, everyMs: CHECKPOINT_EVERY_MS } satisfies CheckpointWorkerData,
  });
  worker.on('message', ({ log }: WalReport) => {
    if (log <= WAL_LIMIT_PAGES || !db.isOpen || db.isTransaction) return;
    own ??= db.prepare('pragma wal_checkpoint(passive)');
    try {
      own.run();
    } catch {
      // Another process holds the file (the CLI); the worker's next report asks again.
    }
  });
  // A worker that failed leaves SQLite's own rule in force: the log stays bounded either way.
  worker.on('error', () => {
    if (db.isOpen) db.exec('pragma wal_autocheckpoint = 1000');
  });
  // After the listeners: adding a 'message' listener would keep the process alive again.
  worker.unref();
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    async stop() {
      worker.ref();
      worker.postMessage('close');
      await exited;
    },
  };
}
