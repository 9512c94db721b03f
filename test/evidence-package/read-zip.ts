import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import yauzl from 'yauzl';
import type { Manifest } from '../../src/evidence-package/index.ts';

export interface ZipEntryRead {
  path: string;
  size: number;
  sha256: string;
  /** The bytes, kept only for entries `keep` chose (large ones are hashed as they stream). */
  bytes?: Buffer;
}

/**
 * Reads a zip with yauzl (a reader independent of the writer), every entry streamed and hashed;
 * keeps the bytes of the entries `keep` picks. `source` is a file path or the zip's bytes.
 */
export async function readZip(
  source: string | Buffer,
  keep: (path: string) => boolean = () => true,
): Promise<ZipEntryRead[]> {
  const zip =
    typeof source === 'string'
      ? await yauzl.openPromise(source, { lazyEntries: true })
      : await yauzl.fromBufferPromise(source, { lazyEntries: true });
  const entries: ZipEntryRead[] = [];
  try {
    for await (const entry of zip.eachEntry()) {
      const stream = await zip.openReadStreamPromise(entry);
      const hash = createHash('sha256');
      const kept: Buffer[] = [];
      let size = 0;
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        hash.update(chunk);
        size += chunk.length;
        if (keep(entry.fileName)) kept.push(chunk);
      }
      entries.push({
        path: entry.fileName,
        size,
        sha256: hash.digest('hex'),
        ...(keep(entry.fileName) ? { bytes: Buffer.concat(kept) } : {}),
      });
    }
  } finally {
    zip.close();
  }
  return entries;
}

/** The manifest of a read package, after checking it names every other entry with its size and hash. */
export function checkedManifest(entries: ZipEntryRead[]): Manifest {
  const last = entries.at(-1);
  assert.equal(last?.path, 'manifest.json', 'the manifest is the last entry');
  assert.ok(last.bytes);
  const manifest = JSON.parse(last.bytes.toString('utf8')) as Manifest;
  assert.deepEqual(
    manifest.files.map((file) => ({ path: file.path, size: file.size, sha256: file.sha256 })).sort(byPath),
    entries
      .slice(0, -1)
      .map((entry) => ({ path: entry.path, size: entry.size, sha256: entry.sha256 }))
      .sort(byPath),
    'the manifest names every other file of the zip with its size and SHA-256',
  );
  return manifest;
}

const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
