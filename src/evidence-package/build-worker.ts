/** A package build's streaming, in a worker of its own (`worker.ts` starts it and feeds it the evidence). */
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import type { InventoryEvidence } from '../compliance/index.ts';
import type { DatabaseHandle } from '../db/database.ts';
import type { Db } from '../db/schema.ts';
import { createFileStore } from '../storage/index.ts';
import { streamPackage } from './stream.ts';
import type { EvidencePage, PackageWorkerData, PackageWorkerMessage } from './worker.ts';

const { database: source, storage, build } = workerData as PackageWorkerData;
if (!parentPort) throw new Error('build-worker.ts runs as a worker');
const parent: MessagePort = parentPort;
const post = (message: PackageWorkerMessage) => parent.postMessage(message);
// The build's time, from the moment it was claimed (the database store dates what it writes).
const claimedAt = performance.now();
const clock = { now: () => new Date(build.generatedAt + performance.now() - claimedAt) };

async function* evidence(): AsyncGenerator<InventoryEvidence> {
  for (;;) {
    const page = await new Promise<EvidencePage>((resolve) => {
      parent.once('message', resolve);
      post({ type: 'evidence' });
    });
    yield* page.items;
    if (page.done) return;
  }
}

// Only the database store needs a connection: the drivers stay out of the worker otherwise.
let database: DatabaseHandle | undefined;
try {
  if (storage.kind === 'database') {
    const { openDatabase } = await import('../db/database.ts');
    database = openDatabase(source.config, { searchPath: source.searchPath });
  }
  const store = await createFileStore(storage, database?.db ?? ({} as Db), clock);
  try {
    // Buffers arrive as Uint8Arrays.
    const documents = build.documents.map((document) => ({
      path: document.path,
      content: Buffer.from(document.content.buffer, document.content.byteOffset, document.content.byteLength),
    }));
    const streamed = await streamPackage(store, { ...build, documents }, evidence(), (files, bytes) =>
      post({ type: 'progress', files, bytes }),
    );
    post({ type: 'done', streamed });
  } finally {
    store.close();
  }
} catch (error) {
  post({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
} finally {
  await database?.close();
}
