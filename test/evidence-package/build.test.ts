// db-scope: both

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import { PACKAGE_FOLDER } from '../../src/evidence-package/index.ts';
import { HOUR_MS } from '../../src/shared/clock.ts';
import type { FileStore } from '../../src/storage/index.ts';
import { type ApiFixture, startApiFixture } from '../helpers/api.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';
import { checkedManifest, readZip } from './read-zip.ts';

async function start(
  t: TestContext,
  options: {
    env?: Record<string, string>;
    documents?: () => Promise<{ path: string; content: Buffer }[]>;
    wrapEvidenceStore?: (store: FileStore) => FileStore;
  } = {},
): Promise<ApiFixture> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-package-build-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  // A database the build's worker can open too, as the service's is.
  const database = await createTestDatabase({ migrate: false, shared: true });
  t.after(() => database.close());
  return startApiFixture(t, {
    database,
    env: { DATA_DIR: dataDir, ...options.env },
    auditDocuments: options.documents ?? (async () => []),
    wrapEvidenceStore: options.wrapEvidenceStore,
  });
}

async function packageFiles(api: ApiFixture): Promise<string[]> {
  const names: string[] = [];
  for await (const object of api.runtime.evidenceStore.list()) {
    if (object.name.startsWith(`${PACKAGE_FOLDER}/`)) names.push(object.name);
  }
  return names;
}

async function uploadPolicy(api: ApiFixture): Promise<void> {
  const form = new FormData();
  form.append('file', new Blob(['# Policy\n']), 'policy.md');
  assert.equal((await api.call('POST', '/evidence', { form })).status, 201);
}

describe(`building evidence packages on ${testDialect}`, () => {
  it('marks a package failed when every attempt fails, and keeps no file of it', async (t) => {
    const api = await start(t, {
      documents: async () => {
        throw new Error('the reports are unavailable');
      },
    });
    const requested = await api.call('POST', '/evidence-packages', { json: {} });
    for (let attempt = 0; attempt < 3; attempt++) {
      await api.runtime.jobs.drain();
      api.runtime.clock.advance(2 * HOUR_MS);
    }
    const status = await api.call('GET', `/evidence-packages/${requested.body.id}`);
    assert.equal(status.body.status, 'failed');
    assert.match(status.body.error, /could not be built/);
    assert.doesNotMatch(status.body.error, /reports are unavailable/, 'the cause stays in the log');
    const file = await api.call('GET', `/evidence-packages/${requested.body.id}/file`);
    assert.equal(file.status, 410);
    assert.equal(file.body.code, 'package_failed');
    assert.deepEqual(await packageFiles(api), []);
  });

  it('fails the build, leaving no file, when an evidence file breaks off while it is read', async (t) => {
    let breaking = true;
    const api = await start(t, {
      wrapEvidenceStore: (store) => ({
        kind: store.kind,
        writePending: (name, source) => store.writePending(name, source),
        finalize: (name) => store.finalize(name),
        async open(name) {
          const stream = await store.open(name);
          if (!stream || !breaking || name.startsWith(`${PACKAGE_FOLDER}/`)) return stream;
          stream.destroy();
          return new Readable({
            read() {
              this.push(Buffer.alloc(1000, 1));
              this.destroy(new Error('EIO: the disk went away'));
            },
          });
        },
        finalSize: (name) => store.finalSize(name),
        remove: (name) => store.remove(name),
        list: () => store.list(),
        close: () => store.close(),
      }),
    });
    breaking = false;
    await uploadPolicy(api);
    breaking = true;
    const requested = await api.call('POST', '/evidence-packages', { json: {} });
    await api.runtime.jobs.drain();
    const job = await api.runtime.database.db
      .selectFrom('jobs')
      .select(['status', 'last_error'])
      .where('kind', '=', 'evidence-package.build')
      .executeTakeFirstOrThrow();
    assert.equal(job.status, 'queued', 'to be tried again');
    assert.match(job.last_error ?? '', /the disk went away/);
    assert.deepEqual(await packageFiles(api), []);

    breaking = false;
    api.runtime.clock.advance(HOUR_MS);
    await api.runtime.jobs.drain();
    const status = await api.call('GET', `/evidence-packages/${requested.body.id}`);
    assert.equal(status.body.status, 'ready', 'the retry builds it');
  });

  it('fails the build in its worker, leaving no file, when a stored evidence file cannot be read', async (t) => {
    const api = await start(t);
    await uploadPolicy(api);
    const evidence = await api.runtime.database.db
      .selectFrom('evidence')
      .select(['workspace_id', 'storage_key'])
      .executeTakeFirstOrThrow();
    const stored = path.join(
      api.runtime.config.dataDir,
      'evidence',
      evidence.workspace_id,
      evidence.storage_key ?? '',
    );
    // A directory where the file was: it opens, and its first read fails (EISDIR).
    rmSync(stored);
    mkdirSync(stored);
    const requested = await api.call('POST', '/evidence-packages', { json: {} });
    await api.runtime.jobs.drain();
    const job = await api.runtime.database.db
      .selectFrom('jobs')
      .select(['status', 'last_error'])
      .where('kind', '=', 'evidence-package.build')
      .executeTakeFirstOrThrow();
    assert.equal(job.status, 'queued', 'to be tried again');
    assert.match(job.last_error ?? '', /EISDIR/);
    assert.deepEqual(await packageFiles(api), []);

    rmSync(stored, { recursive: true });
    writeFileSync(stored, '# Policy\n');
    api.runtime.clock.advance(HOUR_MS);
    await api.runtime.jobs.drain();
    const status = await api.call('GET', `/evidence-packages/${requested.body.id}`);
    assert.equal(status.body.status, 'ready', 'the retry builds it');
    assert.equal((await packageFiles(api)).length, 1);
  });

  it('removes the file a crashed build left before building again', async (t) => {
    const api = await start(t);
    await uploadPolicy(api);
    const requested = await api.call('POST', '/evidence-packages', { json: {} });
    const leftover = `${PACKAGE_FOLDER}/${requested.body.id}-crashed`;
    await api.runtime.evidenceStore.writePending(leftover, Readable.from([Buffer.from('half a zip')]));
    await api.runtime.database.db
      .updateTable('evidence_packages')
      .set({ status: 'building', build_id: 'crashed', storage_name: leftover })
      .execute();

    await api.runtime.jobs.drain();
    const status = await api.call('GET', `/evidence-packages/${requested.body.id}`);
    assert.equal(status.body.status, 'ready');
    const files = await packageFiles(api);
    assert.equal(files.length, 1);
    assert.notEqual(files[0], leftover);
  });

  it('keeps the zip in the database store like any other file, and the sweep removes it', async (t) => {
    const api = await start(t, { env: { EVIDENCE_STORAGE: 'database' } });
    await uploadPolicy(api);
    const requested = await api.call('POST', '/evidence-packages', { json: {} });
    await api.runtime.jobs.drain();
    const response = await fetch(`${api.url}/api/v1/evidence-packages/${requested.body.id}/file`, {
      headers: { authorization: `Bearer ${api.org.key}` },
    });
    assert.equal(response.status, 200);
    const manifest = checkedManifest(await readZip(Buffer.from(await response.arrayBuffer())));
    assert.equal(manifest.files[0]?.path, 'controls/Not linked to a control/policy.md');
    assert.equal((await packageFiles(api)).length, 1);

    api.runtime.clock.advance(73 * HOUR_MS);
    const { sweepPackages } = await import('../../src/evidence-package/index.ts');
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock, store: api.runtime.evidenceStore };
    assert.deepEqual(await sweepPackages(deps), { expired: 1 });
    assert.deepEqual(await sweepPackages(deps), { expired: 0 }, 'a second run finds nothing');
    assert.deepEqual(await packageFiles(api), []);
  });
});
