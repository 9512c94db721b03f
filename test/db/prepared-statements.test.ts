// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { sql } from 'kysely';
import { createTestDatabase, TEST_DATABASE_URL } from '../helpers/database.ts';

describe('statements prepared on a PostgreSQL connection', {
  skip: !TEST_DATABASE_URL && 'PostgreSQL only (TEST_DATABASE_URL)',
}, () => {
  it('prepares a statement with parameters once per connection and reuses it', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());

    await database.db.connection().execute(async (connection) => {
      for (const id of ['ws_a', 'ws_b', 'ws_c']) {
        await connection.selectFrom('workspaces').select(['id', 'name']).where('id', '=', id).execute();
      }
      await connection.selectFrom('workspaces').selectAll().where('id', '=', 'ws_a').execute();
      const { rows } = await sql<{ statement: string }>`
        select statement from pg_prepared_statements where statement like '%from "workspaces"%'`.execute(
        connection,
      );
      assert.equal(rows.length, 1, rows.map((row) => row.statement).join('\n'));
      assert.match(rows[0]?.statement ?? '', /^select "id", "name" from "workspaces" where "id" = \$1$/);
    });
  });

  it('keeps answering after another instance adds a column to the table a prepared statement reads', async (t) => {
    const { database, other } = await twoInstancesWithAWorkspace(t);

    await database.db.connection().execute(async (connection) => {
      const read = () =>
        connection.selectFrom('workspaces').select(['id', 'name']).where('id', '=', 'ws_a').execute();
      assert.deepEqual(await read(), [{ id: 'ws_a', name: 'Acme' }]);
      await sql`alter table workspaces add column added_later text`.execute(other.db);
      await sql`update workspaces set name = 'Acme Ltd' where id = 'ws_a'`.execute(other.db);
      assert.deepEqual(await read(), [{ id: 'ws_a', name: 'Acme Ltd' }]);
      const all = await connection.selectFrom('workspaces').selectAll().where('id', '=', 'ws_a').execute();
      assert.equal(all.length, 1);
    });
  });

  it('fails one query after another instance changes the type of a column it reads, then prepares it again', async (t) => {
    const { database, other } = await twoInstancesWithAWorkspace(t);

    await database.db.connection().execute(async (connection) => {
      const read = () =>
        connection.selectFrom('workspaces').select(['id', 'created_at']).where('id', '=', 'ws_a').execute();
      assert.deepEqual(await read(), [{ id: 'ws_a', created_at: 1 }]);
      await sql`alter table workspaces alter column created_at type numeric`.execute(other.db);
      await assert.rejects(read(), /cached plan must not change result type/);
      assert.deepEqual(await read(), [{ id: 'ws_a', created_at: '1' }]);
    });
  });

  it('prepares a statement again after a value the driver could not send', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());

    await database.db.connection().execute(async (connection) => {
      const byName = (name: unknown) =>
        connection
          .selectFrom('workspaces')
          .select(['id'])
          .where('name', '=', name as string)
          .execute();
      assert.deepEqual(await byName('Acme'), []);
      await assert.rejects(byName({ big: 1n }), TypeError);
      assert.deepEqual(await byName('Acme'), []);
    });
  });
});

/** A test database seen by two instances (two pools), with one workspace in it. */
async function twoInstancesWithAWorkspace(t: TestContext) {
  const database = await createTestDatabase();
  t.after(() => database.close());
  const other = database.reopen();
  t.after(() => other.close());
  await other.db
    .insertInto('workspaces')
    .values({ id: 'ws_a', name: 'Acme', plan: 'free', created_at: 1, updated_at: 1 })
    .execute();
  return { database, other };
}
