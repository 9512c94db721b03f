// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { API_PREFIX } from '../../src/api/index.ts';
import { API_KEY_CACHE_MS, revokeApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { loadConfig } from '../../src/config.ts';
import {
  changesSeen,
  POSTGRES_KEPT_READ_MS,
  readsVersion,
  SQLITE_OUTSIDE_WRITES_MS,
} from '../../src/db/changes.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { createRuntime } from '../../src/runtime.ts';
import { createOrganizationIn } from '../helpers/api.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';
import { startTestRuntime } from '../helpers/runtime.ts';

/**
 * Two instances of the service on one database (and one clock), as behind a load balancer. Each
 * sees its own writes in its next read; `seen(b)` waits until B has seen every change committed
 * so far (its own notifications on PostgreSQL, the file's `data_version` on SQLite), without
 * waiting out the bound.
 */
async function twoInstances(t: TestContext, options: { statements?: string[] } = {}) {
  const database = await createTestDatabase({ shared: true });
  t.after(() => database.close());
  const a = await startTestRuntime(t, { database });
  const second = database.reopen();
  const counted = options.statements;
  if (counted) {
    const { openDatabase } = await import('../../src/db/database.ts');
    await second.close();
    Object.assign(
      second,
      openDatabase(
        testDialect === 'sqlite'
          ? { kind: 'sqlite', file: (database.connection?.url ?? '').slice('sqlite:'.length) }
          : { kind: 'postgres', url: database.connection?.url ?? '' },
        {
          searchPath: database.connection?.searchPath,
          onStatement: (event) => counted.push(event.query.sql),
        },
      ),
    );
  }
  const b = await createRuntime(loadConfig({ NODE_ENV: 'test', BASE_URL: 'http://svc.test' }), {
    clock: a.clock,
    database: second,
  });
  t.after(async () => {
    await b.close();
    await second.close();
  });
  const org = await createOrganizationIn(a);
  const call = async (instance: typeof a.app, method: 'GET' | 'PATCH', path: string, json?: unknown) => {
    const response = await instance.inject({
      method,
      url: `${API_PREFIX}${path}`,
      headers: { authorization: `Bearer ${org.key}` },
      ...(json === undefined ? {} : { payload: json as object }),
    });
    return { status: response.statusCode, body: response.json() };
  };
  // On PostgreSQL an instance keeps nothing until it listens; the first read starts it.
  for (const db of [a.database.db, second.db]) {
    for (let i = 0; i < 250 && readsVersion(db) === undefined; i++) await sleep(20);
    assert.notEqual(readsVersion(db), undefined, 'the instance never listened for changes');
  }
  return { a, b, org, call, second, seen: () => changesSeen(second.db) };
}

describe(`read caches across instances on ${testDialect}`, () => {
  it('a control changed through one instance is in its next read, and on the other once seen', async (t) => {
    const { a, b, call, seen } = await twoInstances(t);
    const before = await call(b.app, 'GET', '/controls?limit=5');
    assert.equal(before.status, 200);
    assert.equal((await call(b.app, 'GET', '/controls?limit=5')).body.data[0].status, 'not_started');
    const first = before.body.data[0];

    assert.equal((await call(a.app, 'GET', '/controls?limit=5')).body.data[0].status, 'not_started');

    const patched = await call(a.app, 'PATCH', `/controls/${first.id}`, { status: 'implemented' });
    assert.equal(patched.status, 200);
    assert.equal((await call(a.app, 'GET', '/controls?limit=5')).body.data[0].status, 'implemented');
    await seen();
    assert.equal((await call(b.app, 'GET', '/controls?limit=5')).body.data[0].status, 'implemented');

    await call(b.app, 'PATCH', `/controls/${first.id}`, { notes: 'reviewed' });
    assert.equal((await call(b.app, 'GET', '/controls?limit=5')).body.data[0].notes, 'reviewed');
    await changesSeen(a.database.db);
    assert.equal((await call(a.app, 'GET', '/controls?limit=5')).body.data[0].notes, 'reviewed');
  });

  it('a workspace first used on two instances at once gets one set of 93 controls', async (t) => {
    const { a, b, org, call } = await twoInstances(t);
    const [listOnA, readinessOnB, againOnA, againOnB] = await Promise.all([
      call(a.app, 'GET', '/controls?limit=200'),
      call(b.app, 'GET', '/readiness'),
      call(a.app, 'GET', '/controls?limit=200'),
      call(b.app, 'GET', '/controls?limit=200'),
    ]);
    assert.deepEqual(
      [listOnA, readinessOnB, againOnA, againOnB].map((use) => use.status),
      [200, 200, 200, 200],
    );
    const ids = (use: typeof listOnA) => use.body.data.map((c: { id: string }) => c.id);
    assert.equal(ids(listOnA).length, 93);
    assert.deepEqual(ids(againOnA), ids(listOnA));
    assert.deepEqual(ids(againOnB), ids(listOnA), 'both instances list the same controls');
    assert.equal(readinessOnB.body.total, 93);
    const stored = await a.database.db
      .selectFrom('controls')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('workspace_id', '=', org.workspaceId)
      .executeTakeFirstOrThrow();
    assert.equal(Number(stored.count), 93);
  });

  it('a control changed outside the API (another module, the CLI) is in the next list read', async (t) => {
    const { a, b, call, seen } = await twoInstances(t);
    const first = (await call(b.app, 'GET', '/controls?limit=1')).body.data[0];
    await a.database.db
      .updateTable('controls')
      .set({ title: 'Renamed outside the API' })
      .where('id', '=', first.id)
      .execute();
    assert.equal(
      (await call(a.app, 'GET', '/controls?limit=1')).body.data[0].title,
      'Renamed outside the API',
    );
    await seen();
    assert.equal(
      (await call(b.app, 'GET', '/controls?limit=1')).body.data[0].title,
      'Renamed outside the API',
    );
  });

  it('an owner deleted from the database is gone from the next list read (a foreign-key action)', async (t) => {
    const { a, b, org, call, seen } = await twoInstances(t);
    const person = await a.app.inject({
      method: 'POST',
      url: `${API_PREFIX}/people`,
      headers: { authorization: `Bearer ${org.key}` },
      payload: { email: 'ada@example.com' },
    });
    assert.equal(person.statusCode, 201, person.body);
    const first = (await call(b.app, 'GET', '/controls?limit=1')).body.data[0];
    await call(a.app, 'PATCH', `/controls/${first.id}`, { owner_id: person.json().id });
    await seen();
    assert.equal((await call(b.app, 'GET', '/controls?limit=1')).body.data[0].owner_id, person.json().id);

    await a.database.db.deleteFrom('people').where('id', '=', person.json().id).execute();
    assert.equal((await call(a.app, 'GET', '/controls?limit=1')).body.data[0].owner_id, null);
    await seen();
    assert.equal((await call(b.app, 'GET', '/controls?limit=1')).body.data[0].owner_id, null);
  });

  it('a key revoked on one instance is refused there at once and on the other within the bound', async (t) => {
    const { a, b, org, call } = await twoInstances(t);
    assert.equal((await call(a.app, 'GET', '/me')).status, 200);
    assert.equal((await call(b.app, 'GET', '/me')).status, 200);

    await revokeApiKey(a.database.db, a.clock, org.keyId, OPERATOR_SOURCE);
    const onA = await call(a.app, 'GET', '/me');
    assert.deepEqual([onA.status, onA.body.code], [401, 'api_key_revoked']);

    a.clock.advance(API_KEY_CACHE_MS);
    const onB = await call(b.app, 'GET', '/me');
    assert.deepEqual([onB.status, onB.body.code], [401, 'api_key_revoked']);
  });

  it('a workspace renamed, or its plan changed, is in the next /me of its instance and then of the other', async (t) => {
    const { a, b, org, call, seen } = await twoInstances(t);
    assert.equal((await call(b.app, 'GET', '/me')).body.organization.name, 'Acme Ltd');
    assert.equal((await call(a.app, 'GET', '/me')).body.organization.name, 'Acme Ltd');

    const renamed = await call(a.app, 'PATCH', '/me', { organization: { name: 'Acme Holdings' } });
    assert.equal(renamed.status, 200);
    assert.equal((await call(a.app, 'GET', '/me')).body.organization.name, 'Acme Holdings');
    await seen();
    assert.equal((await call(b.app, 'GET', '/me')).body.organization.name, 'Acme Holdings');

    // A term ended by the sweep, as another module writes it.
    await inTransaction(a.database.db, async (trx) => {
      await trx.updateTable('workspace_terms').set({ ended_at: a.clock.now().getTime() }).execute();
      await trx.updateTable('workspaces').set({ plan: 'free' }).where('id', '=', org.workspaceId).execute();
    });
    const onA = await call(a.app, 'GET', '/me');
    assert.deepEqual([onA.body.plan, onA.body.term], ['free', null]);
    await seen();
    const onB = await call(b.app, 'GET', '/me');
    assert.deepEqual([onB.body.plan, onB.body.term], ['free', null]);
  });

  it('a repeated read runs no statement: it is answered from memory', async (t) => {
    const statements: string[] = [];
    const { b, call } = await twoInstances(t, { statements });
    for (const path of ['/me', '/controls?limit=5']) {
      // On PostgreSQL the first reads start listening; nothing is kept until it listens.
      let ran = Number.POSITIVE_INFINITY;
      for (let attempt = 0; attempt < 50 && ran > 0; attempt++) {
        assert.equal((await call(b.app, 'GET', path)).status, 200);
        statements.length = 0;
        assert.equal((await call(b.app, 'GET', path)).status, 200);
        ran = statements.length;
        if (ran > 0) await sleep(20);
      }
      assert.equal(ran, 0, `${path} ran statements on a repeated read`);
    }
  });

  it('a change whose notice is lost is still read once the bound has passed', async (t) => {
    const { a, b, call } = await twoInstances(t);
    const first = (await call(b.app, 'GET', '/controls?limit=1')).body.data[0];
    assert.equal((await call(b.app, 'GET', '/me')).body.organization.name, 'Acme Ltd');
    // On SQLite another connection's commit is noticed only through the file's data_version; on
    // PostgreSQL a write with triggers off (replica mode) sends no notification at all.
    await inTransaction(a.database.db, async (trx) => {
      if (testDialect === 'postgres') await sql`set local session_replication_role = replica`.execute(trx);
      await trx.updateTable('controls').set({ title: 'Unannounced' }).where('id', '=', first.id).execute();
      await trx.updateTable('workspaces').set({ name: 'Unannounced Ltd' }).execute();
    });
    await sleep(testDialect === 'postgres' ? POSTGRES_KEPT_READ_MS : SQLITE_OUTSIDE_WRITES_MS);
    assert.equal((await call(b.app, 'GET', '/controls?limit=1')).body.data[0].title, 'Unannounced');
    assert.equal((await call(b.app, 'GET', '/me')).body.organization.name, 'Unannounced Ltd');
  });
});
