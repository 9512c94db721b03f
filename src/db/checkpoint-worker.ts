/** Copies a SQLite file's write-ahead log into the database from a thread of its own (`checkpoint.ts`). */
import { DatabaseSync } from 'node:sqlite';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { CheckpointWorkerData, WalReport } from './checkpoint.ts';

const { file, everyMs } = workerData as CheckpointWorkerData;
if (!parentPort) throw new Error('checkpoint-worker.ts runs as a worker');
const parent: MessagePort = parentPort;

const db = new DatabaseSync(file, { timeout: 1000 });
const checkpoint = db.prepare('pragma wal_checkpoint(passive)');
checkpoint.setReturnArrays(true);

// PASSIVE never waits for the writer: it copies what no reader still needs, fsyncs included.
const timer = setInterval(() => {
  try {
    const [, log, copied] = checkpoint.get() as unknown as number[];
    parent.postMessage({ log: Number(log), copied: Number(copied) } satisfies WalReport);
  } catch {
    // The file is locked or going away; the next round tries again, the owner's close ends it.
  }
}, everyMs);

parent.on('message', () => {
  clearInterval(timer);
  db.close();
  parent.close();
});
