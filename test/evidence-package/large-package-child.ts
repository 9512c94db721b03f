/**
 * `setup`: a workspace with 64 files of 32 MiB and 600 small ones stored as evidence in a local
 * store in `PACKAGE_DIR`, and a package requested. `build`, in a fresh process with default flags:
 * runs that package's build job as the runtime wires it (streaming in a worker that opens the
 * database and the store itself) and reports the process's peak RSS, the worker's included. The
 * database is the parent's (`DATABASE`: `{ url, searchPath? }` as JSON).
 */
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { openDatabase } from '../../src/db/database.ts';
import { buildPackageJob, requestPackage } from '../../src/evidence-package/index.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createLocalStore } from '../../src/storage/index.ts';

const MIB = 1024 * 1024;
const CHUNK = 64 * 1024;
const LARGE_FILES = 64;
const LARGE_SIZE = 32 * MIB;
const SMALL_FILES = 600;
const SMALL_SIZE = 1024;

const block = Buffer.alloc(MIB);
for (let offset = 0; offset < MIB; offset += 32) {
  createHash('sha256').update(`block ${offset}`).digest().copy(block, offset);
}

/** `size` bytes, the same every time for one `seed`, made 64 KiB at a time (as a file is read) when asked. */
function generated(seed: string, size: number): Readable {
  let sent = 0;
  let piece = 0;
  return new Readable({
    highWaterMark: CHUNK,
    read() {
      if (sent >= size) {
        this.push(null);
        return;
      }
      const length = Math.min(CHUNK, size - sent);
      const chunk = Buffer.from(block.subarray((piece % 16) * CHUNK, (piece % 16) * CHUNK + length));
      chunk.write(`${seed}:${piece++}`, 0, 'latin1');
      sent += length;
      this.push(chunk);
    },
  });
}

async function hashOf(stream: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of stream as AsyncIterable<Buffer>) hash.update(chunk);
  return hash.digest('hex');
}

const connection = JSON.parse(process.env.DATABASE ?? '{}') as { url: string; searchPath?: string };
const database = connection.url.startsWith('sqlite:')
  ? openDatabase({ kind: 'sqlite', file: connection.url.slice('sqlite:'.length) })
  : openDatabase({ kind: 'postgres', url: connection.url }, { searchPath: connection.searchPath });
const db = database.db;
const root = process.env.PACKAGE_DIR ?? '';
const store = createLocalStore(root);
const clock = new ManualClock('2026-03-01T12:00:00.000Z');

async function setup(): Promise<void> {
  // Loaded here, so the build's process holds only what a build needs.
  const { SYSTEM_ACTOR } = await import('../../src/audit/index.ts');
  const { inTransaction } = await import('../../src/db/transaction.ts');
  const { newId } = await import('../../src/shared/ids.ts');
  const { provisionWorkspace } = await import('../../src/workspace/index.ts');
  const { workspace } = await inTransaction(db, (trx) =>
    provisionWorkspace(
      trx,
      {
        name: 'Large Ltd',
        plan: 'pro',
        ownerEmail: 'owner@example.com',
        term: {
          term: 'year',
          startsAt: clock.now(),
          channel: 'operator',
          orderId: newId('opord', clock.now()),
        },
      },
      { clock, baseUrl: 'http://svc.test' },
    ),
  );
  const { getControl } = await import('../../src/compliance/index.ts');
  const control = await getControl({ db, clock }, workspace.id, 'A.8.13');
  if (!control) throw new Error('the workspace has no control A.8.13');

  const files = [
    ...Array.from({ length: LARGE_FILES }, (_, n) => ({
      key: `large${n}`,
      size: LARGE_SIZE,
      name: `backup-${n}.tar`,
    })),
    ...Array.from({ length: SMALL_FILES }, (_, n) => ({
      key: `small${n}`,
      size: SMALL_SIZE,
      name: `log-${n}.txt`,
    })),
  ];
  for (const [index, file] of files.entries()) {
    const storedName = `${workspace.id}/${file.key}`;
    await store.writePending(storedName, generated(storedName, file.size));
    await store.finalize(storedName);
    const id = newId('evd', new Date(clock.now().getTime() + index));
    const at = clock.now().getTime() + index;
    await db
      .insertInto('evidence')
      .values({
        id,
        workspace_id: workspace.id,
        kind: 'file',
        title: file.name,
        url: null,
        file_name: file.name,
        file_size: file.size,
        file_sha256: await hashOf((await store.open(storedName)) ?? Readable.from([])),
        content_type: 'application/x-tar',
        storage_key: file.key,
        retired_at: null,
        created_at: at,
        updated_at: at,
      })
      .execute();
    await db
      .insertInto('evidence_controls')
      .values({ evidence_id: id, control_id: control.id, workspace_id: workspace.id, created_at: at })
      .execute();
  }
  const requested = await requestPackage({ db, clock, store }, workspace.id, {}, { actor: SYSTEM_ACTOR });
  if (!requested.ok) throw new Error(requested.error.code);
  process.stdout.write(`${JSON.stringify({ packageId: requested.value.row.id })}\n`);
}

async function build(packageId: string): Promise<void> {
  if (!database.source) throw new Error('the build needs a database another thread can open');
  const logger = { info() {}, warn() {}, error() {} };
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 20);
  const documents = async () => [
    { path: 'statement-of-applicability/current.csv', content: Buffer.from('reference,applicable\n') },
  ];
  const job = buildPackageJob(
    { db, clock, store, documents, log: logger },
    { database: database.source, storage: { kind: 'local', root } },
  );
  await job.run({ packageId }, { jobId: 'job_large_package', attempt: 1 });
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  const row = await db
    .selectFrom('evidence_packages')
    .selectAll()
    .where('id', '=', packageId)
    .executeTakeFirstOrThrow();
  process.stdout.write(
    `${JSON.stringify({ before, peak, status: row.status, storageName: row.storage_name, size: Number(row.size) })}\n`,
  );
}

if (process.argv[2] === 'build') await build(process.argv[3] ?? '');
else await setup();
await database.close();
