// db-scope: sqlite

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';

describe('SQLite checkpoints', () => {
  it('are off the serving connection: a worker copies the log, and close removes it', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-checkpoints-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'svc.sqlite');
    const database = openDatabase({ kind: 'sqlite', file });
    const automatic = await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(
      database.db,
    );
    assert.equal(automatic.rows[0]?.wal_autocheckpoint, 0);

    await sql`create table filler (id integer primary key, text text not null)`.execute(database.db);
    const before = statSync(file).size;
    for (let i = 0; i < 200; i++) {
      await sql`insert into filler (text) values (${'x'.repeat(4000)})`.execute(database.db);
    }
    // No commit copied anything into the database file itself; the worker does, soon after.
    for (let round = 0; statSync(file).size === before; round++) {
      assert.ok(round < 600, 'the worker never checkpointed the log');
      await sleep(50);
    }

    await database.close();
    assert.equal(existsSync(`${file}-wal`), false);
    const reopened = openDatabase({ kind: 'sqlite', file });
    t.after(() => reopened.close());
    const rows = await sql<{ n: number }>`select count(*) as n from filler`.execute(reopened.db);
    assert.equal(rows.rows[0]?.n, 200);
  });
});
