// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';

describe('rows read from SQLite', () => {
  it('carry every column of the statement, with the values of each row', async (t) => {
    const { db, close } = openDatabase({ kind: 'sqlite', file: ':memory:' });
    t.after(close);
    const { rows } = await sql<{ a: number; b: string | null }>`
      select 1 as a, 'x' as b union all select 2, null`.execute(db);
    assert.deepEqual(
      rows.map((row) => ({ ...row })),
      [
        { a: 1, b: 'x' },
        { a: 2, b: null },
      ],
    );
  });

  it('keep a column named __proto__ as a plain field, never as the prototype', async (t) => {
    const { db, close } = openDatabase({ kind: 'sqlite', file: ':memory:' });
    t.after(close);
    const { rows } = await sql<Record<string, unknown>>`
      select '{"polluted":true}' as "__proto__", json_object('polluted', 1) as "constructor"`.execute(db);
    const [row] = rows;
    assert.ok(row);
    assert.equal(Object.hasOwn(row, '__proto__'), true);
    assert.equal(Object.getOwnPropertyDescriptor(row, '__proto__')?.value, '{"polluted":true}');
    assert.equal((row as { polluted?: unknown }).polluted, undefined);
    assert.equal(({} as { polluted?: unknown }).polluted, undefined);
  });

  it('answer the last of two columns of one name, as node:sqlite does', async (t) => {
    const { db, close } = openDatabase({ kind: 'sqlite', file: ':memory:' });
    t.after(close);
    const { rows } = await sql<{ a: number }>`select 1 as a, 2 as a`.execute(db);
    assert.equal(rows[0]?.a, 2);
  });
});
