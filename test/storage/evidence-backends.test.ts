// db-scope: both

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import type { EvidenceFailpointName } from '../../src/compliance/index.ts';
import { PENDING_FILE_GRACE_MS, sweepEvidenceFiles } from '../../src/compliance/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createRuntime } from '../../src/runtime.ts';
import { CHUNK_BYTES, type StoredObject } from '../../src/storage/index.ts';
import { knownWorkspaceIds } from '../../src/workspace/index.ts';
import { type ApiFixture, startApiFixture } from '../helpers/api.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';
import {
  EVIDENCE_BACKENDS,
  type EvidenceBackend,
  evidenceEnv,
  failingS3Env,
  failingWrites,
  writeError,
} from '../helpers/evidence-stores.ts';

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** A CSV of a little over 3 MiB, every line different, so a chunk out of place shows. */
function largeCsv(): Buffer {
  const lines = ['control,evidence,checked\n'];
  let size = lines[0]?.length ?? 0;
  for (let row = 0; size < 3 * 1024 * 1024 + 1000; row++) {
    const line = `A.${row % 93},review ${row} ${createHash('md5').update(String(row)).digest('hex')},yes\n`;
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join(''));
}
const LARGE = largeCsv();
const PDF = Buffer.from('%PDF-1.7\n1 0 obj <</Type /Catalog>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n');

function form(bytes: Buffer, name: string): FormData {
  const data = new FormData();
  data.append('file', new Blob([bytes]), name);
  return data;
}

async function download(api: ApiFixture, id: string) {
  const response = await fetch(`${api.url}/api/v1/evidence/${id}/file`, {
    headers: { authorization: `Bearer ${api.org.key}` },
  });
  return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
}

async function storedObjects(api: ApiFixture): Promise<StoredObject[]> {
  const objects: StoredObject[] = [];
  for await (const object of api.runtime.evidenceStore.list()) objects.push(object);
  return objects;
}

function crashOnceAt(name: EvidenceFailpointName) {
  let armed = true;
  return {
    async hit(reached: EvidenceFailpointName) {
      if (armed && reached === name) {
        armed = false;
        throw new Error(`simulated crash at ${name}`);
      }
    },
  };
}

async function start(t: TestContext, backend: EvidenceBackend, crashAt?: EvidenceFailpointName) {
  return startApiFixture(t, {
    env: await evidenceEnv(t, backend),
    evidenceFailpoints: crashAt ? crashOnceAt(crashAt) : undefined,
  });
}

/** The database has no room for another chunk: SQLite at its page limit, PostgreSQL's disk full. */
async function fillDatabase(api: ApiFixture): Promise<void> {
  const { db } = api.runtime.database;
  if (testDialect === 'sqlite') {
    // A limit below the database's size is raised to that size: not one page more.
    await sql`pragma max_page_count = 1`.execute(db);
    return;
  }
  await sql`create function fill_disk() returns trigger language plpgsql as $$
    begin raise exception 'could not extend file: No space left on device' using errcode = 'disk_full'; end $$`.execute(
    db,
  );
  await sql`create trigger fill_disk before insert on stored_file_chunks
    for each row execute function fill_disk()`.execute(db);
}

/**
 * A service whose store has no room (a disk filling up mid-file; the database full) or fails (S3
 * answering 500), and what it then answers.
 */
async function startFailing(t: TestContext, backend: EvidenceBackend) {
  switch (backend) {
    case 'local': {
      const env = await evidenceEnv(t, backend);
      const wrapEvidenceStore = failingWrites(() => writeError('ENOSPC'));
      return {
        api: await startApiFixture(t, { env, wrapEvidenceStore }),
        status: 507,
        code: 'insufficient_storage',
      };
    }
    case 'database': {
      const api = await start(t, backend);
      await fillDatabase(api);
      return { api, status: 507, code: 'insufficient_storage' };
    }
    case 's3':
      return {
        api: await startApiFixture(t, { env: await failingS3Env(t) }),
        status: 503,
        code: 'storage_unavailable',
      };
  }
}

/** The sweep as the hourly job runs it, or with every pending file past its bound. */
function sweep(api: ApiFixture, pendingBefore = Number.POSITIVE_INFINITY) {
  const { db } = api.runtime.database;
  return sweepEvidenceFiles(
    { db, store: api.runtime.evidenceStore, knownWorkspaces: (ids) => knownWorkspaceIds(db, ids) },
    pendingBefore,
  );
}

for (const backend of EVIDENCE_BACKENDS) {
  describe(`evidence files kept on the ${backend} backend, with ${testDialect}`, () => {
    it('take a multi-megabyte file in and give it back byte for byte; deleting it leaves nothing', async (t) => {
      const api = await start(t, backend);
      const created = await api.call('POST', '/evidence', { form: form(LARGE, 'soa.csv') });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual(
        [created.body.file.size, created.body.file.sha256, created.body.file.content_type],
        [LARGE.length, sha256(LARGE), 'text/csv'],
      );
      const { status, bytes } = await download(api, created.body.id);
      assert.equal(status, 200);
      assert.equal(bytes.length, LARGE.length);
      assert.ok(bytes.equals(LARGE), 'the same bytes');
      assert.deepEqual(
        (await storedObjects(api)).map((object) => [object.name, object.pending]),
        [
          [
            `${api.org.workspaceId}/${(await api.runtime.database.db.selectFrom('evidence').select('storage_key').executeTakeFirstOrThrow()).storage_key}`,
            false,
          ],
        ],
      );
      assert.equal((await api.call('DELETE', `/evidence/${created.body.id}`)).status, 204);
      assert.deepEqual(await storedObjects(api), []);
    });

    it('stream a download piece by piece: no piece is larger than a chunk', async (t) => {
      const api = await start(t, backend);
      const created = await api.call('POST', '/evidence', { form: form(LARGE, 'soa.csv') });
      const [object] = await storedObjects(api);
      const stream = await api.runtime.evidenceStore.open(object?.name ?? '');
      assert.ok(stream);
      let pieces = 0;
      let largest = 0;
      const hash = createHash('sha256');
      for await (const piece of stream as AsyncIterable<Buffer>) {
        pieces++;
        largest = Math.max(largest, piece.length);
        hash.update(piece);
      }
      assert.ok(largest <= CHUNK_BYTES, `the largest piece was ${largest} bytes`);
      assert.ok(pieces >= Math.ceil(LARGE.length / CHUNK_BYTES), `${pieces} pieces`);
      assert.equal(hash.digest('hex'), created.body.file.sha256);
    });

    it("refuse an upload beyond the plan's evidence storage, leaving no file", async (t) => {
      const api = await start(t, backend);
      const first = await api.call('POST', '/evidence', { form: form(PDF, 'a.pdf') });
      assert.equal(first.status, 201);
      // The Pro plan holds 50 GiB: pretend the first file took nearly all of it.
      await api.runtime.database.db
        .updateTable('evidence')
        .set({ file_size: 50 * 1024 ** 3 - 100 })
        .execute();
      const refused = await api.call('POST', '/evidence', { form: form(LARGE, 'soa.csv') });
      assert.deepEqual([refused.status, refused.body.code], [403, 'plan_limit_reached']);
      assert.equal((await storedObjects(api)).length, 1, 'only the first file');
      assert.deepEqual(await sweep(api), { finalized: 0, removed: 0, unnamed: 0, foreign: 0 });
    });

    it('answer 507 when the store has no room and 503 when it fails, keeping no record and no file', async (t) => {
      const { api, status, code } = await startFailing(t, backend);
      const failed = await api.call('POST', '/evidence', { form: form(LARGE, 'soa.csv') });
      assert.deepEqual([failed.status, failed.body.code], [status, code], JSON.stringify(failed.body));
      assert.equal(failed.headers.get('retry-after'), status === 503 ? '30' : null);
      assert.deepEqual(await api.runtime.database.db.selectFrom('evidence').selectAll().execute(), []);
      // The failing S3 endpoint keeps nothing; the others are listed.
      if (backend !== 's3') assert.deepEqual(await storedObjects(api), []);
    });

    it('leave no file without its record after a crash between the file and the record', async (t) => {
      const api = await start(t, backend, 'evidence_file_written');
      const crashed = await api.call('POST', '/evidence', { form: form(PDF, 'a.pdf') });
      assert.equal(crashed.status, 500);
      assert.deepEqual(await api.runtime.database.db.selectFrom('evidence').selectAll().execute(), []);
      assert.deepEqual(
        (await storedObjects(api)).map((object) => object.pending),
        [true],
        'the crash left a pending file',
      );
      const kept = await api.call('POST', '/evidence', { form: form(PDF, 'b.pdf') });
      assert.equal(kept.status, 201);
      const hourly = await sweep(api, api.runtime.clock.now().getTime() - PENDING_FILE_GRACE_MS);
      assert.equal(hourly.finalized, 0);
      const afterBound = await sweep(api);
      assert.deepEqual(afterBound, { finalized: 0, removed: 1, unnamed: 0, foreign: 0 });
      const left = await storedObjects(api);
      assert.equal(left.length, 1);
      assert.equal(left[0]?.pending, false);
      assert.ok((await download(api, kept.body.id)).bytes.equals(PDF));
    });

    it('leave no record without its file after a crash between the record and the finalize', async (t) => {
      const api = await start(t, backend, 'evidence_row_committed');
      const crashed = await api.call('POST', '/evidence', { form: form(PDF, 'a.pdf') });
      assert.equal(crashed.status, 500);
      const [row] = await api.runtime.database.db.selectFrom('evidence').selectAll().execute();
      assert.ok(row, 'the record committed');
      assert.deepEqual(
        (await storedObjects(api)).map((object) => object.pending),
        [true],
      );
      assert.ok((await download(api, row.id)).bytes.equals(PDF), 'served while still pending');
      assert.deepEqual(await sweep(api), { finalized: 1, removed: 0, unnamed: 0, foreign: 0 });
      assert.deepEqual(
        (await storedObjects(api)).map((object) => object.pending),
        [false],
      );
      assert.ok((await download(api, row.id)).bytes.equals(PDF));
    });

    it('keep a final file no record names, and count it (a failed deletion, or a restored copy sharing the store)', async (t) => {
      const api = await start(t, backend);
      const created = await api.call('POST', '/evidence', { form: form(PDF, 'a.pdf') });
      // What a restored copy of the database sees: the workspace, not the evidence added since.
      await api.runtime.database.db.deleteFrom('evidence').where('id', '=', created.body.id).execute();
      assert.deepEqual(await sweep(api), { finalized: 0, removed: 0, unnamed: 1, foreign: 0 });
      assert.equal((await storedObjects(api)).length, 1);
    });

    it("leave alone the files of another database's workspaces in a shared store", async (t) => {
      const api = await start(t, backend);
      const other = 'ws_06h1fkothrdb0000000000000/evd_key';
      await api.runtime.evidenceStore.writePending(other, Readable.from([PDF]));
      await api.runtime.evidenceStore.finalize(other);
      await api.runtime.evidenceStore.writePending(`${other}-pending`, Readable.from([PDF]));
      assert.deepEqual(await sweep(api, Number.POSITIVE_INFINITY), {
        finalized: 0,
        removed: 0,
        unnamed: 0,
        foreign: 2,
      });
      assert.equal((await storedObjects(api)).length, 2);
    });
  });
}

describe(`two instances on one ${testDialect} database with EVIDENCE_STORAGE=database`, () => {
  it('serve each other the files they took in', async (t) => {
    const database = await createTestDatabase({ shared: true });
    t.after(() => database.close());
    const env = await evidenceEnv(t, 'database');
    const a = await startApiFixture(t, { env, database });
    const config = loadConfig({ NODE_ENV: 'test', BASE_URL: 'http://svc.test', ...env });
    const secondHandle = database.reopen();
    const b = await createRuntime(config, { database: secondHandle });
    t.after(async () => {
      await b.close();
      await secondHandle.close();
    });
    const bUrl = await b.app.listen({ host: '127.0.0.1', port: 0 });
    const created = await a.call('POST', '/evidence', { form: form(LARGE, 'soa.csv') });
    assert.equal(created.status, 201);
    const response = await fetch(`${bUrl}/api/v1/evidence/${created.body.id}/file`, {
      headers: { authorization: `Bearer ${a.org.key}` },
    });
    assert.equal(response.status, 200);
    assert.ok(Buffer.from(await response.arrayBuffer()).equals(LARGE));
  });
});
