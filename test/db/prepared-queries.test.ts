// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { insertRow, type Param, preparedQuery, preparedRowQuery } from '../../src/db/prepared.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';

const workspace = (id: string, name: string) => ({
  id,
  name,
  plan: 'pro' as const,
  created_at: 1,
  updated_at: 2,
});

async function migratedDatabase(t: TestContext) {
  const database = await createTestDatabase();
  t.after(() => database.close());
  return database.db;
}

describe(`queries compiled once on ${testDialect}`, () => {
  it('run with the values of each call, a name used twice taking one value, fixed values kept', async (t) => {
    const db = await migratedDatabase(t);
    await insertRow(db, 'workspaces', workspace('ws_a', 'Acme'));
    await insertRow(db, 'workspaces', workspace('ws_b', 'Beta'));
    await insertRow(db, 'workspaces', { ...workspace('ws_c', 'Beta'), plan: 'free' });
    let builds = 0;
    const named = preparedQuery((db, param: Param<{ name: string }>) => {
      builds++;
      return db
        .selectFrom('workspaces')
        .select('id')
        .where((eb) => eb.or([eb('name', '=', param('name')), eb('id', '=', param('name'))]))
        .where('plan', '=', 'pro')
        .orderBy('id');
    });

    assert.deepEqual((await named(db, { name: 'Beta' })).rows, [{ id: 'ws_b' }]);
    assert.deepEqual((await named(db, { name: 'ws_a' })).rows, [{ id: 'ws_a' }]);
    assert.deepEqual((await named(db, { name: 'nobody' })).rows, []);
    assert.equal(builds, 1);
  });

  it('serve inside a transaction of the same database, and see its uncommitted rows', async (t) => {
    const db = await migratedDatabase(t);
    let builds = 0;
    const byId = preparedQuery((db, param: Param<{ id: string }>) => {
      builds++;
      return db.selectFrom('workspaces').select('name').where('id', '=', param('id'));
    });
    assert.deepEqual((await byId(db, { id: 'ws_t' })).rows, []);

    await assert.rejects(
      inTransaction(db, async (trx) => {
        await insertRow(trx, 'workspaces', workspace('ws_t', 'Uncommitted'));
        assert.deepEqual((await byId(trx, { id: 'ws_t' })).rows, [{ name: 'Uncommitted' }]);
        throw new Error('roll back');
      }),
      /roll back/,
    );
    assert.deepEqual((await byId(db, { id: 'ws_t' })).rows, []);
    assert.equal(builds, 1);
  });

  it('insert a row without the columns it leaves undefined, so their defaults apply', async (t) => {
    const db = await migratedDatabase(t);
    await insertRow(db, 'workspaces', workspace('ws_a', 'Acme'));
    const insertTerm = preparedRowQuery(
      (
        db,
        row: {
          id: string;
          workspace_id: string;
          plan: 'pro';
          term: 'year';
          starts_at: number;
          ends_at: number;
          channel: string;
          order_id: string;
          ended_at?: number;
          created_at: number;
        },
      ) => db.insertInto('workspace_terms').values(row).returning(['id', 'ended_at']),
    );
    const term = (id: string, ended_at?: number) => ({
      id,
      workspace_id: 'ws_a',
      plan: 'pro' as const,
      term: 'year' as const,
      starts_at: 1,
      ends_at: 2,
      channel: 'acp',
      order_id: `ord_${id}`,
      ended_at,
      created_at: 1,
    });

    assert.deepEqual((await insertTerm(db, term('term_1'))).rows, [{ id: 'term_1', ended_at: null }]);
    assert.deepEqual((await insertTerm(db, term('term_2', 5))).rows, [{ id: 'term_2', ended_at: 5 }]);
    assert.deepEqual((await insertTerm(db, term('term_3'))).rows, [{ id: 'term_3', ended_at: null }]);
  });

  it('refuse a value written into the SQL text instead of passed with it', async (t) => {
    const db = await migratedDatabase(t);
    const literal = preparedQuery((db, param: Param<{ name: string }>) =>
      db
        .selectFrom('workspaces')
        .select('id')
        .where('name', '=', sql.lit(param('name'))),
    );
    await assert.rejects(literal(db, { name: 'Acme' }), /written into its SQL/);
  });

  it('refuse an expression where a value was compiled, instead of passing it as one', async (t) => {
    const db = await migratedDatabase(t);
    await insertRow(db, 'workspaces', workspace('ws_a', 'Acme'));
    await assert.rejects(
      insertRow(db, 'workspaces', {
        ...workspace('ws_b', 'Beta'),
        name: sql<string>`upper('beta')` as unknown as string,
      }),
      /value name is an object/,
    );
    assert.deepEqual(await db.selectFrom('workspaces').select('id').execute(), [{ id: 'ws_a' }]);
  });
});
