import { pipeline } from 'node:stream';
import type { InventoryEvidence } from '../compliance/index.ts';
import type { FileStore } from '../storage/index.ts';
import { measuring, type PackageDocument, writePackageZip } from './zip.ts';

/** A build that owns its package's row: what the zip is made of, whichever thread streams it. */
export interface ClaimedBuild {
  packageId: string;
  workspaceId: string;
  buildId: string;
  storageName: string;
  range: { from: string | null; to: string | null };
  documents: PackageDocument[];
  /** Epoch milliseconds, the manifest's `generated_at`. */
  generatedAt: number;
}

/** What a finished stream wrote to the store. */
export interface StreamedPackage {
  files: number;
  contentBytes: number;
  size: number;
  sha256: string;
}

/** Streams a claimed build's zip into the store: in this thread, or in a worker (`worker.ts`). */
export type StreamPackage = (
  build: ClaimedBuild,
  evidence: AsyncIterable<InventoryEvidence>,
  onProgress: (files: number, bytes: number) => Promise<void>,
) => Promise<StreamedPackage>;

/** Writes the zip to the store and answers its size and hash; on a failure, keeps no file. */
export async function streamPackage(
  store: FileStore,
  build: ClaimedBuild,
  evidence: AsyncIterable<InventoryEvidence>,
  onProgress: (files: number, bytes: number) => Promise<void> | void,
): Promise<StreamedPackage> {
  const { output, manifest } = writePackageZip({
    workspaceId: build.workspaceId,
    range: build.range,
    generatedAt: new Date(build.generatedAt),
    documents: build.documents,
    evidence,
    openFile: (name) => store.open(name),
    onProgress,
  });
  const zip = measuring();
  try {
    // An error of the zip (a file that broke off) reaches the store's write, which then keeps nothing.
    const body = pipeline(output, zip, () => {});
    const [written] = await Promise.all([manifest, store.writePending(build.storageName, body)]);
    await store.finalize(build.storageName);
    return {
      files: written.files.length,
      contentBytes: written.files.reduce((sum, file) => sum + file.size, 0),
      size: zip.size,
      sha256: zip.digest(),
    };
  } catch (error) {
    output.destroy();
    await store.remove(build.storageName);
    throw error;
  }
}
