// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import { TEST_DATABASE_URL } from '../helpers/database.ts';

describe('a PostgreSQL connection cut under the service (a database restart)', {
  skip: !TEST_DATABASE_URL && 'PostgreSQL only (TEST_DATABASE_URL)',
}, () => {
  it('fails the transaction using it, is reported, and leaves the process and the pool working', async (t) => {
    const url = TEST_DATABASE_URL ?? '';
    const reported: Error[] = [];
    const database = openDatabase(
      { kind: 'postgres', url },
      { onIdleClientError: (error) => reported.push(error) },
    );
    const admin = openDatabase({ kind: 'postgres', url });
    t.after(async () => {
      await database.close();
      await admin.close();
    });

    const outcome = database.db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
      // The connection is checked out and between two queries when the server ends it.
      await sql`select pg_terminate_backend(${rows[0]?.pid})`.execute(admin.db);
      await sleep(300);
      await sql`select 1`.execute(trx);
    });
    await assert.rejects(outcome);
    assert.ok(
      reported.some((error) => /terminating connection/.test(error.message)),
      `reported: ${reported.map((error) => error.message).join('; ')}`,
    );
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(database.db);
    assert.deepEqual(rows, [{ one: 1 }]);
  });
});
