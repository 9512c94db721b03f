// db-scope: sqlite

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import { openDatabase } from '../../src/db/database.ts';
import type { Db } from '../../src/db/schema.ts';

/**
 * The service's SQLite handle on a file, with a table `notes` (and `doomed`, whose insert fails the
 * whole transaction), and a second connection of its own
 * on the same file: what that one sees is what a crash of the service would leave.
 */
async function openNotes(t: TestContext) {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-group-commit-'));
  const file = path.join(dir, 'svc.sqlite');
  const database = openDatabase({ kind: 'sqlite', file });
  await sql`create table notes (id text primary key, body text not null)`.execute(database.db);
  const outside = new DatabaseSync(file, { readOnly: true });
  t.after(async () => {
    outside.close();
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const committed = () =>
    (outside.prepare('select id from notes order by id').all() as { id: string }[]).map((row) => row.id);
  const insert = (id: string) => sql`insert into notes (id, body) values (${id}, 'x')`.execute(database.db);
  // RAISE(ROLLBACK) ends the whole transaction, as a full disk or an I/O error does.
  await sql`create table doomed (id text)`.execute(database.db);
  await sql`create trigger doom before insert on doomed begin select raise(rollback, 'doomed'); end`.execute(
    database.db,
  );
  const insertDoomed = () => sql`insert into doomed (id) values ('x')`.execute(database.db);
  return { db: database.db as Db, file, committed, insert, insertDoomed };
}

describe('SQLite group commit', () => {
  it('commits the writes of one turn together, and answers each only once committed', async (t) => {
    const { committed, insert } = await openNotes(t);
    const ids = Array.from({ length: 20 }, (_, i) => `n${String(i).padStart(2, '0')}`);
    const seenAtAnswer: string[][] = [];
    await Promise.all(ids.map((id) => insert(id).then(() => seenAtAnswer.push(committed()))));
    // The first answer already found all twenty committed: one transaction held them.
    assert.deepEqual(seenAtAnswer[0], ids);
    assert.equal(seenAtAnswer.length, ids.length);
  });

  it('makes a read that saw uncommitted rows wait for their commit', async (t) => {
    const { db, committed, insert } = await openNotes(t);
    const write = insert('a');
    const read = sql<{ id: string }>`select id from notes`.execute(db).then((result) => ({
      rows: result.rows.map((row) => row.id),
      committedThen: committed(),
    }));
    const { rows, committedThen } = await read;
    assert.deepEqual(rows, ['a']);
    assert.deepEqual(committedThen, ['a']);
    await write;
  });

  it('fails only the statement a constraint refuses; the rest of the group commits', async (t) => {
    const { committed, insert } = await openNotes(t);
    await insert('a');
    const results = await Promise.allSettled([insert('b'), insert('a'), insert('c')]);
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /UNIQUE constraint failed/);
    assert.deepEqual(committed(), ['a', 'b', 'c']);
  });

  it('fails every write of a group whose transaction an error ended, and keeps none of them', async (t) => {
    const { committed, insert, insertDoomed } = await openNotes(t);
    const results = await Promise.allSettled([insert('a'), insertDoomed(), insert('b')]);
    assert.equal(results[0]?.status, 'rejected', 'the write before the error is gone with it');
    assert.match(String((results[1] as PromiseRejectedResult).reason), /doomed/);
    // The write after the error ran in a group of its own.
    assert.equal(results[2]?.status, 'fulfilled');
    assert.deepEqual(committed(), ['b']);
    await insert('c');
    assert.deepEqual(committed(), ['b', 'c']);
  });

  it('gives a transaction the connection to itself, and its rollback undoes only its writes', async (t) => {
    const { db, committed, insert } = await openNotes(t);
    let outsideWrite: Promise<unknown> | undefined;
    const transaction = db.transaction().execute(async (trx) => {
      await sql`insert into notes (id, body) values ('in-1', 'x')`.execute(trx);
      // Another caller writes while the transaction is open: it waits for the end, not inside it.
      outsideWrite = insert('out');
      await sleep(20);
      await sql`insert into notes (id, body) values ('in-2', 'x')`.execute(trx);
      throw new Error('changed my mind');
    });
    const before = insert('before');
    await assert.rejects(transaction, /changed my mind/);
    await before;
    await outsideWrite;
    assert.deepEqual(committed(), ['before', 'out']);
  });

  it('commits the group of a transaction that outlived its turn as it ends, however many follow', async (t) => {
    const { db, committed, insert } = await openNotes(t);
    const slowTransaction = (id: string) =>
      db.transaction().execute(async (trx) => {
        await sql`insert into notes (id, body) values (${id}, 'x')`.execute(trx);
        await sleep(10);
      });
    const first = slowTransaction('t1');
    const neighbour = insert('w1').then(() => committed());
    const second = slowTransaction('t2');
    // The write that waited for the first transaction is answered once committed, not after the second.
    assert.deepEqual(await neighbour, ['t1', 'w1']);
    await Promise.all([first, second]);
    assert.deepEqual(committed(), ['t1', 't2', 'w1']);
  });

  it('fails a write refused over a row of its group with the group, when the group fails', async (t) => {
    const { committed, insert, insertDoomed } = await openNotes(t);
    const results = await Promise.allSettled([insert('a'), insert('a'), insertDoomed()]);
    // The duplicate's conflict was with a row that is gone: it must not report a conflict.
    assert.doesNotMatch(String((results[1] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.deepEqual(committed(), []);
  });

  it('returns from a transaction commit only once it is committed', async (t) => {
    const { db, committed, insert } = await openNotes(t);
    const neighbour = insert('a');
    await db.transaction().execute(async (trx) => {
      await sql`insert into notes (id, body) values ('b', 'x')`.execute(trx);
      await sql`insert into notes (id, body) values ('c', 'x')`.execute(trx);
    });
    assert.deepEqual(committed(), ['a', 'b', 'c']);
    await neighbour;
  });

  it('lets a second handle of the process write while the first holds its group open', async (t) => {
    const { file, committed, insert } = await openNotes(t);
    const second = openDatabase({ kind: 'sqlite', file });
    t.after(() => second.close());
    const insertThroughSecond = (id: string) =>
      sql`insert into notes (id, body) values (${id}, 'x')`.execute(second.db);
    // A busy wait for the lock would hold the event loop, and with it the commit that frees it.
    await Promise.all([insert('a'), insertThroughSecond('b'), insert('c'), insertThroughSecond('d')]);
    assert.deepEqual(committed(), ['a', 'b', 'c', 'd']);
  });

  it("waits for another process's write lock in a statement that takes it outside a group (DDL)", async (t) => {
    const { db, file } = await openNotes(t);
    // A thread of its own stands in for the other process: it holds the lock while this one waits.
    const holder = new Worker(
      `const { DatabaseSync } = require('node:sqlite');
       const { parentPort, workerData } = require('node:worker_threads');
       const db = new DatabaseSync(workerData);
       db.exec('begin immediate');
       parentPort.postMessage('held');
       Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
       db.exec('commit');
       db.close();`,
      { eval: true, workerData: file },
    );
    t.after(() => holder.terminate());
    await once(holder, 'message');
    await sql`create table later (id text)`.execute(db);
    await sql`insert into later (id) values ('a')`.execute(db);
    const rows = await sql<{ id: string }>`select id from later`.execute(db);
    assert.deepEqual(rows.rows, [{ id: 'a' }]);
  });

  it('commits an open group before a statement that cannot run in a transaction (vacuum into)', async (t) => {
    const { db, file, insert } = await openNotes(t);
    const copy = path.join(path.dirname(file), 'copy.sqlite');
    const write = insert('a');
    await sql`vacuum into ${copy}`.execute(db);
    await write;
    const backup = new DatabaseSync(copy, { readOnly: true });
    t.after(() => backup.close());
    assert.deepEqual(
      backup
        .prepare('select id from notes')
        .all()
        .map((row) => row.id),
      ['a'],
    );
  });
});
