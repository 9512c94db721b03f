import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { constants, tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline, Transform } from 'node:stream';
import type { TestContext } from 'node:test';
import S3rver from 's3rver';
import type { FileStore } from '../../src/storage/index.ts';

export type EvidenceBackend = 'local' | 'database' | 's3';
export const EVIDENCE_BACKENDS: readonly EvidenceBackend[] = ['local', 'database', 's3'];

/** s3rver's fixed credentials; the SDK's default chain reads them from the environment. */
process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';

function temporaryDirectory(t: TestContext, prefix: string): string {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

/** An S3-compatible server in this process, on a loopback port, with an empty bucket. */
export async function startS3(t: TestContext): Promise<{ endpoint: string; bucket: string }> {
  const bucket = 'evidence-test';
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory: temporaryDirectory(t, 'svc-s3-'),
    silent: true,
    configureBuckets: [{ name: bucket }],
  });
  const { port } = await server.run();
  t.after(() => {
    server.httpServer.closeAllConnections();
    return server.close();
  });
  return { endpoint: `http://127.0.0.1:${port}`, bucket };
}

/** The environment that makes a test service keep evidence on `backend` (a fresh one). */
export async function evidenceEnv(t: TestContext, backend: EvidenceBackend): Promise<Record<string, string>> {
  const dataDir = temporaryDirectory(t, 'svc-evidence-');
  if (backend === 'local') return { DATA_DIR: dataDir };
  if (backend === 'database') return { DATA_DIR: dataDir, EVIDENCE_STORAGE: 'database' };
  const s3 = await startS3(t);
  return {
    DATA_DIR: dataDir,
    EVIDENCE_STORAGE: 's3',
    S3_BUCKET: s3.bucket,
    S3_ENDPOINT: s3.endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    S3_PREFIX: 'evidence/',
  };
}

const SYSTEM_ERRORS = {
  ENOSPC: { code: 'ENOSPC', message: 'no space left on device' },
  // libuv has no name for EDQUOT: Node reports it as UNKNOWN, with its number.
  EDQUOT: { code: 'UNKNOWN', message: 'unknown error' },
  EIO: { code: 'EIO', message: 'i/o error' },
} as const;

/** A failed write as Node's file system reports it (`ENOSPC: no space left on device, write`). */
export function writeError(name: keyof typeof SYSTEM_ERRORS): NodeJS.ErrnoException {
  const { code, message } = SYSTEM_ERRORS[name];
  return Object.assign(new Error(`${code}: ${message}, write`), {
    code,
    errno: -constants.errno[name],
    syscall: 'write',
  });
}

/**
 * The store, with each write failing with `error()` after its first piece of the file (or after
 * `piecesWritten`), as a disk that fills up mid-file: the real store writes the first bytes, meets
 * the error, and cleans up. An upload through `inject` arrives as one piece: fail it at once.
 */
export function failingWrites(error: () => Error, piecesWritten = 1): (store: FileStore) => FileStore {
  return (store) => ({
    ...store,
    writePending(name, source) {
      let pieces = 0;
      const fillingUp = new Transform({
        transform(piece: Buffer, _encoding, done) {
          done(pieces++ >= piecesWritten ? error() : null, piece);
        },
      });
      // Like a store's own pipeline, the failure destroys the stream the store was given.
      return store.writePending(
        name,
        pipeline(source, fillingUp, () => {}),
      );
    },
  });
}

/** The environment of an S3 store whose endpoint answers every request with a 500 `InternalError`. */
export async function failingS3Env(t: TestContext): Promise<Record<string, string>> {
  const server = createServer((request, response) => {
    request.resume();
    response.writeHead(500, { 'content-type': 'application/xml' });
    response.end(
      '<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>',
    );
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return {
    DATA_DIR: temporaryDirectory(t, 'svc-evidence-'),
    EVIDENCE_STORAGE: 's3',
    S3_BUCKET: 'evidence-test',
    S3_ENDPOINT: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    S3_FORCE_PATH_STYLE: 'true',
  };
}
