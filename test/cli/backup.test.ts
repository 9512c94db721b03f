// db-scope: both

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  appendFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import type { DatabaseConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { purchase } from '../../src/purchase/index.ts';
import { TEST_DATABASE_URL, type TestDatabase, testDialect } from '../helpers/database.ts';
import { startS3 } from '../helpers/evidence-stores.ts';
import { type PurchaseFixture, purchaseRequest, startPurchaseFixture } from '../helpers/purchase.ts';

const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** The operator CLI as a process of its own, with the service's configuration in `env`. */
async function svc(env: Record<string, string>, ...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['src/cli.ts', ...args], {
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

function temporaryDirectory(t: TestContext, prefix: string): string {
  const directory = mkdtempSync(path.join(tmpdir(), prefix));
  t.after(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
}

interface Deployment {
  /** The service's configuration: its DATA_DIR (SQLite file, local evidence), DATABASE_URL on PostgreSQL. */
  env: Record<string, string>;
  database: DatabaseConfig;
  /** Removes its data (drops its PostgreSQL database), once nothing has it open. */
  remove(): Promise<void>;
  started: boolean;
}

/**
 * An empty deployment: a fresh DATA_DIR, and on PostgreSQL a fresh database of its own. It is
 * removed when the test ends: after its service stopped, or at once if none was started on it.
 */
async function emptyDeployment(t: TestContext): Promise<Deployment> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-backup-'));
  const env: Record<string, string> = { DATA_DIR: dataDir };
  let database: DatabaseConfig = { kind: 'sqlite', file: path.join(dataDir, 'svc.sqlite') };
  let drop = async () => {};
  const serverUrl = TEST_DATABASE_URL;
  if (serverUrl) {
    const name = `bk_${randomBytes(6).toString('hex')}`;
    const admin = openDatabase({ kind: 'postgres', url: serverUrl });
    await sql`create database ${sql.id(name)}`.execute(admin.db);
    await admin.close();
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    database = { kind: 'postgres', url: url.href };
    env.DATABASE_URL = url.href;
    drop = async () => {
      const cleanup = openDatabase({ kind: 'postgres', url: serverUrl });
      await sql`drop database ${sql.id(name)}`.execute(cleanup.db);
      await cleanup.close();
    };
  }
  const deployment: Deployment = {
    env,
    database,
    started: false,
    async remove() {
      await drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  t.after(() => (deployment.started ? undefined : deployment.remove()));
  return deployment;
}

/** A service on the deployment with the PSP sandbox, listening on loopback. */
async function startService(t: TestContext, deployment: Deployment) {
  const open = () => openDatabase(deployment.database);
  const database: TestDatabase = { ...open(), reopen: open };
  const fixture = await startPurchaseFixture(t, { database, env: deployment.env });
  // After hooks run in the order they were added: the fixture's stop the service before this one.
  t.after(async () => {
    await database.close();
    await deployment.remove();
  });
  deployment.started = true;
  const url = await fixture.runtime.app.listen({ host: '127.0.0.1', port: 0 });
  return { fixture, url };
}

type Service = Awaited<ReturnType<typeof startService>>;

interface Bought {
  orderId: string;
  workspaceId: string;
  key: string;
}

async function buy(fixture: PurchaseFixture, email: string): Promise<Bought> {
  const outcome = await purchase(
    fixture.runtime.purchases,
    purchaseRequest(await fixture.mintToken(), { itemId: 'svc-pro-monthly', buyer: { email } }),
  );
  if (outcome.kind !== 'completed') assert.fail(JSON.stringify(outcome));
  const created = await createApiKey(
    fixture.runtime.database.db,
    fixture.clock,
    { workspaceId: outcome.order.workspaceId, name: 'backup test' },
    OPERATOR_SOURCE,
  );
  if (!created.ok) assert.fail(created.error.code);
  return { orderId: outcome.order.id, workspaceId: outcome.order.workspaceId, key: created.value.key };
}

/** A CSV of about 300 KiB, different every time, so a file mixed up with another shows. */
function uniqueCsv(): Buffer {
  const seed = randomBytes(8).toString('hex');
  const lines = ['control,evidence\n'];
  for (let row = 0; row < 6000; row++) lines.push(`A.${row % 93},${seed} review ${row}\n`);
  return Buffer.from(lines.join(''));
}

async function upload(service: Service, key: string, bytes: Buffer): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([bytes]), 'review.csv');
  const response = await fetch(`${service.url}/api/v1/evidence`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  const body = (await response.json()) as { id: string };
  assert.equal(response.status, 201, JSON.stringify(body));
  return body.id;
}

async function download(service: Service, key: string, evidenceId: string): Promise<Buffer> {
  const response = await fetch(`${service.url}/api/v1/evidence/${evidenceId}/file`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(response.status, 200);
  return Buffer.from(await response.arrayBuffer());
}

describe(`backup and restore of the database and the evidence files on ${testDialect}`, () => {
  it('a backup taken while purchases and uploads go on restores into a service that sells and serves every file; evidence check finds a lost or altered one', async (t) => {
    const source = await emptyDeployment(t);
    const live = await startService(t, source);
    const keys = new Map<string, string>();
    const files = new Map<string, { bytes: Buffer; workspaceId: string }>();
    const buyAndUpload = async (email: string) => {
      const bought = await buy(live.fixture, email);
      keys.set(bought.workspaceId, bought.key);
      const bytes = uniqueCsv();
      files.set(await upload(live, bought.key, bytes), { bytes, workspaceId: bought.workspaceId });
      return bought;
    };
    for (let n = 0; n < 3; n++) await buyAndUpload(`before${n}@example.com`);
    const ordersBefore = (
      await live.fixture.runtime.database.db.selectFrom('orders').select('id').execute()
    ).map((order) => order.id);

    const backupDir = path.join(temporaryDirectory(t, 'svc-backup-to-'), 'nightly');
    mkdirSync(backupDir, { mode: 0o755 }); // made beforehand, open to every local user
    let backupFinished = false;
    const backup = svc(source.env, 'backup', '--to', backupDir).finally(() => {
      backupFinished = true;
    });
    const boughtDuring: Bought[] = [];
    const load = async (lane: number) => {
      for (let n = 0; !backupFinished; n++)
        boughtDuring.push(await buyAndUpload(`during${lane}-${n}@example.com`));
    };
    await Promise.all([load(1), load(2)]);
    const backedUp = await backup;
    assert.equal(backedUp.code, 0, backedUp.stderr);
    assert.match(
      backedUp.stdout,
      /^backed up the (sqlite|postgres) database \(migration \d{4}_\w+\) to .+ evidence files copied\n$/,
    );
    assert.ok(boughtDuring.length > 0, 'purchases ran while the backup did');
    assert.equal(statSync(backupDir).mode & 0o777, 0o700, 'only the operator can read the backup');
    const manifest = JSON.parse(readFileSync(path.join(backupDir, 'manifest.json'), 'utf8'));
    assert.equal(manifest.database, testDialect);
    assert.equal(manifest.evidenceBackend, 'local');
    assert.deepEqual(manifest.missingEvidenceFiles, []);

    const again = await svc(source.env, 'backup', '--to', backupDir);
    assert.deepEqual(
      [again.code, again.stderr],
      [1, `${backupDir} is not empty; back up into a new directory\n`],
    );

    const target = await emptyDeployment(t);
    if (target.database.kind === 'sqlite') {
      // A crashed service's write-ahead log beside the target would be replayed onto the copy.
      const wal = `${target.database.file}-wal`;
      writeFileSync(wal, 'left by a crash');
      const beside = await svc(target.env, 'restore', '--from', backupDir);
      assert.equal(beside.code, 1);
      assert.match(beside.stderr, /a database already exists .*svc\.sqlite-wal/);
      rmSync(wal);
    }
    const restored = await svc(target.env, 'restore', '--from', backupDir);
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(
      restored.stdout,
      new RegExp(`; ${manifest.evidenceFiles} evidence files copied to the local store`),
    );
    const checked = await svc(target.env, 'evidence', 'check');
    assert.equal(checked.code, 0, checked.stdout);
    assert.equal(
      checked.stdout,
      `checked ${manifest.evidenceFiles} evidence files in the local store: 0 missing, 0 mismatched\n`,
    );
    const twice = await svc(target.env, 'restore', '--from', backupDir);
    assert.equal(twice.code, 1);
    assert.equal(twice.stderr.trimEnd().split('\n').length, 1, twice.stderr);
    assert.match(twice.stderr, /already/);

    const restoredService = await startService(t, target);
    const db = restoredService.fixture.runtime.database.db;
    const orders = await db.selectFrom('orders').select(['id', 'workspace_id']).execute();
    const orderIds = new Set(orders.map((order) => order.id));
    for (const id of ordersBefore)
      assert.ok(orderIds.has(id), `order ${id} of before the backup is restored`);
    const completedCharges = await db
      .selectFrom('payment_attempts')
      .select('id')
      .where('status', '=', 'completed')
      .execute();
    const workspaces = await db.selectFrom('workspaces').select('id').execute();
    assert.deepEqual(
      [completedCharges.length, workspaces.length],
      [orders.length, orders.length],
      'every charge in the backup has its order and its workspace',
    );
    assert.deepEqual(
      new Set(workspaces.map((workspace) => workspace.id)),
      new Set(orders.map((order) => order.workspace_id)),
    );

    const evidence = await db.selectFrom('evidence').select(['id', 'workspace_id']).execute();
    assert.equal(evidence.length, manifest.evidenceFiles);
    assert.ok(evidence.length >= ordersBefore.length);
    for (const row of evidence) {
      const uploaded = files.get(row.id) ?? assert.fail(`evidence ${row.id} was never uploaded`);
      const bytes = await download(restoredService, keys.get(row.workspace_id) ?? '', row.id);
      assert.ok(bytes.equals(uploaded.bytes), `evidence ${row.id} downloads byte for byte`);
    }

    const [lost, altered] = await db
      .selectFrom('evidence')
      .select(['id', 'workspace_id', 'storage_key'])
      .orderBy('id')
      .limit(2)
      .execute();
    const storedFile = (row?: { workspace_id: string; storage_key: string | null }) =>
      path.join(target.env.DATA_DIR ?? '', 'evidence', row?.workspace_id ?? '', row?.storage_key ?? '');
    rmSync(storedFile(lost));
    appendFileSync(storedFile(altered), 'one more line\n');
    const problems = await svc(target.env, 'evidence', 'check');
    assert.equal(problems.code, 1);
    assert.equal(
      problems.stdout,
      `missing     ${lost?.id}\nmismatched  ${altered?.id}\nchecked ${manifest.evidenceFiles} evidence files in the local store: 1 missing, 1 mismatched\n`,
    );

    const smoke = await buy(restoredService.fixture, 'after-restore@example.com');
    const smokeFile = uniqueCsv();
    const smokeId = await upload(restoredService, smoke.key, smokeFile);
    assert.ok((await download(restoredService, smoke.key, smokeId)).equals(smokeFile));
  });

  it("moves an S3 deployment's evidence into the database store: the restore copies the files from the bucket the backup names", async (t) => {
    const s3 = await startS3(t);
    const bucketEnv = {
      EVIDENCE_STORAGE: 's3',
      S3_BUCKET: s3.bucket,
      S3_ENDPOINT: s3.endpoint,
      S3_FORCE_PATH_STYLE: 'true',
      S3_PREFIX: 'evidence/',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
    const source = await emptyDeployment(t);
    Object.assign(source.env, bucketEnv);
    const live = await startService(t, source);
    const uploaded = new Map<string, { bytes: Buffer; key: string }>();
    for (const email of ['first@example.com', 'second@example.com']) {
      const bought = await buy(live.fixture, email);
      const bytes = uniqueCsv();
      uploaded.set(await upload(live, bought.key, bytes), { bytes, key: bought.key });
    }

    const backupDir = path.join(temporaryDirectory(t, 'svc-backup-s3-'), 'nightly');
    const backedUp = await svc(source.env, 'backup', '--to', backupDir);
    assert.equal(backedUp.code, 0, backedUp.stderr);
    assert.match(backedUp.stdout, /2 evidence files not copied: they stay in S3 bucket evidence-test,/);
    const manifest = JSON.parse(readFileSync(path.join(backupDir, 'manifest.json'), 'utf8'));
    assert.deepEqual(manifest.s3, {
      bucket: s3.bucket,
      region: 'us-east-1',
      endpoint: s3.endpoint,
      forcePathStyle: true,
      prefix: 'evidence/',
    });
    assert.doesNotMatch(JSON.stringify(manifest), /S3RVER/, 'the manifest holds no credentials');

    // A backup taken before manifests named the bucket cannot copy: the restore says so.
    const older = path.join(temporaryDirectory(t, 'svc-backup-s3-older-'), 'nightly');
    cpSync(backupDir, older, { recursive: true });
    const { s3: _, ...olderManifest } = manifest;
    writeFileSync(path.join(older, 'manifest.json'), JSON.stringify(olderManifest));
    const unnamed = await emptyDeployment(t);
    Object.assign(unnamed.env, { EVIDENCE_STORAGE: 'database' });
    const fromOlder = await svc(unnamed.env, 'restore', '--from', older);
    assert.equal(fromOlder.code, 0, fromOlder.stderr);
    assert.match(
      fromOlder.stdout,
      /evidence files are not in the backup \(S3, taken before backups named their bucket\)/,
    );

    const sameBucket = await emptyDeployment(t);
    Object.assign(sameBucket.env, bucketEnv);
    const inPlace = await svc(sameBucket.env, 'restore', '--from', backupDir);
    assert.equal(inPlace.code, 0, inPlace.stderr);
    assert.match(
      inPlace.stdout,
      /; evidence files stay in S3 bucket evidence-test, where the configuration keeps them\./,
    );

    const target = await emptyDeployment(t);
    Object.assign(target.env, {
      EVIDENCE_STORAGE: 'database',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    });
    const moved = await svc(target.env, 'restore', '--from', backupDir);
    assert.equal(moved.code, 0, moved.stderr);
    assert.match(moved.stdout, /; 2 evidence files copied to the database store\./);
    const checked = await svc(target.env, 'evidence', 'check');
    assert.equal(checked.stdout, 'checked 2 evidence files in the database store: 0 missing, 0 mismatched\n');

    const restored = await startService(t, target);
    for (const [id, file] of uploaded) {
      assert.ok(
        (await download(restored, file.key, id)).equals(file.bytes),
        `evidence ${id} moved byte for byte`,
      );
    }
  });
});
