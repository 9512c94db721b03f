/** Copies a SQLite file's write-ahead log into the database from a thread of its own (`checkpoint.ts`). */
import { DatabaseSync } from 'node:sqlite';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { CheckpointRequest, CheckpointWorkerData, WalReport } from './checkpoint.ts';

const { file, everyMs } = workerData as CheckpointWorkerData;
if (!parentPort) throw new Error('checkpoint-worker.ts runs as a worker');
const parent: MessagePort = parentPort;

const db = new DatabaseSync(file, { timeout: 1000 });
const checkpoint = db.prepare('pragma wal_checkpoint(passive)');
checkpoint.setReturnArrays(true);

/** PASSIVE never waits for the writer: it copies what no reader still needs, fsyncs included. */
function copy(): { log: number; copied: number } | undefined {
  try {
    const [, log, copied] = checkpoint.get() as unknown as number[];
    return { log: Number(log), copied: Number(copied) };
  } catch {
    // The file is locked or going away; the next round tries again, the owner's close ends it.
    return undefined;
  }
}

const timer = setInterval(() => {
  const report = copy();
  if (report) parent.postMessage({ ...report, asked: false } satisfies WalReport);
}, everyMs);

parent.on('message', (request: CheckpointRequest) => {
  if (request === 'checkpoint') {
    // Always answered: the owner holds its next statement until it is.
    parent.postMessage({ ...(copy() ?? { log: 0, copied: 0 }), asked: true } satisfies WalReport);
    return;
  }
  clearInterval(timer);
  db.close();
  parent.close();
});
