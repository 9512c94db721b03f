import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import S3rver from 's3rver';

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
