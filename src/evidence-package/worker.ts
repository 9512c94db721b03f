import { Worker } from 'node:worker_threads';
import type { InventoryEvidence } from '../compliance/index.ts';
import type { EvidenceStorageConfig } from '../config.ts';
import type { DatabaseSource } from '../db/database.ts';
import type { ClaimedBuild, StreamedPackage, StreamPackage } from './stream.ts';

/** How a worker opens the runtime's evidence store (and database, for the database store) itself. */
export interface PackageWorkerConfig {
  database: DatabaseSource;
  storage: EvidenceStorageConfig;
}

/** What `build-worker.ts` is started with. */
export interface PackageWorkerData extends PackageWorkerConfig {
  build: ClaimedBuild;
}

/** What `build-worker.ts` posts: asks for the next page of evidence, reports progress, ends. */
export type PackageWorkerMessage =
  | { type: 'evidence' }
  | { type: 'progress'; files: number; bytes: number }
  | { type: 'done'; streamed: StreamedPackage }
  | { type: 'failed'; message: string };

/** The answer to `{ type: 'evidence' }`. */
export interface EvidencePage {
  items: InventoryEvidence[];
  done: boolean;
}

const EVIDENCE_PAGE = 100;

/**
 * The worker's young generation. Each 64 KiB read buffer is a small object in V8's heap holding
 * external memory, freed only when V8 collects that object: with a young generation of the default
 * size, tens of MB of read buffers wait. A small one, in the worker's own isolate, is collected
 * every MB or two without shrinking the server's.
 */
const YOUNG_GENERATION_MB = 2;

/**
 * Streams builds in `worker_threads` workers, one per build, each opening the evidence store from
 * the runtime's configuration. The evidence list is read here and handed over a page at a time (so
 * the worker loads no more than the zip and the store need); progress comes back as messages. A
 * failure, or a worker that stops without finishing, rejects the build (the job retries it).
 * `stop` terminates the workers in flight.
 */
export function packageWorkers(config: PackageWorkerConfig): {
  stream: StreamPackage;
  stop(): Promise<void>;
} {
  const running = new Set<Worker>();
  const stream: StreamPackage = (build, evidence, onProgress) =>
    new Promise((resolve, reject) => {
      const data: PackageWorkerData = { ...config, build };
      const worker = new Worker(new URL('./build-worker.ts', import.meta.url), {
        workerData: data,
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
      });
      running.add(worker);
      const inventory = evidence[Symbol.asyncIterator]();
      let outcome: { streamed: StreamedPackage } | { error: Error } | undefined;
      // Progress is written one report after another, and before the build's end is.
      let progress = Promise.resolve();
      const fail = (error: Error) => {
        outcome ??= { error };
        void worker.terminate();
      };
      const sendPage = async () => {
        const page: EvidencePage = { items: [], done: false };
        while (page.items.length < EVIDENCE_PAGE) {
          const next = await inventory.next();
          if (next.done) {
            page.done = true;
            break;
          }
          page.items.push(next.value);
        }
        worker.postMessage(page);
      };
      worker.on('message', (message: PackageWorkerMessage) => {
        if (message.type === 'evidence') sendPage().catch(fail);
        else if (message.type === 'progress') {
          progress = progress.then(() => onProgress(message.files, message.bytes)).catch(fail);
        } else if (message.type === 'done') outcome ??= { streamed: message.streamed };
        else outcome ??= { error: new Error(message.message) };
      });
      worker.on('error', fail);
      // Settled once the worker is gone: its store and connection closed, a failed build's file removed.
      worker.on('exit', (code) => {
        running.delete(worker);
        void progress.then(() => {
          if (outcome && 'streamed' in outcome) resolve(outcome.streamed);
          else reject(outcome?.error ?? new Error(`the package build's worker stopped (exit code ${code})`));
        });
      });
    });
  return {
    stream,
    async stop() {
      await Promise.all([...running].map((worker) => worker.terminate()));
    },
  };
}
