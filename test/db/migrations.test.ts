// db-scope: both

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type Kysely, sql } from 'kysely';
import annexA from '../../src/compliance/iso27001-2022-annex-a.json' with { type: 'json' };
import { openDatabase } from '../../src/db/database.ts';
import { migrateToLatest, migrations, pendingMigrations } from '../../src/db/migrate.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { createOrderLinks, findOrderByPageLink } from '../../src/purchase/index.ts';
import { newId } from '../../src/shared/ids.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';

describe(`migrations on ${testDialect}`, () => {
  it('apply every migration once; a second run applies nothing', async (t) => {
    const database = await createTestDatabase({ migrate: false });
    t.after(() => database.close());
    assert.deepEqual(await pendingMigrations(database.db), Object.keys(migrations));
    assert.deepEqual(await migrateToLatest(database.db), Object.keys(migrations));
    assert.deepEqual(await migrateToLatest(database.db), []);
    assert.deepEqual(await pendingMigrations(database.db), []);
  });

  it('lets concurrent instances migrate the same database safely', {
    skip: testDialect !== 'postgres',
  }, async (t) => {
    const database = await createTestDatabase({ migrate: false });
    t.after(() => database.close());
    const second = database.reopen();
    t.after(() => second.close());
    const [a, b] = await Promise.all([migrateToLatest(database.db), migrateToLatest(second.db)]);
    assert.deepEqual([...a, ...b].sort(), Object.keys(migrations).sort());
  });

  it('gives workspaces made before the compliance migration the Annex A controls new ones get', async (t) => {
    const database = await createTestDatabase({ migrate: false });
    t.after(() => database.close());
    const names = Object.keys(migrations);
    const before = names.slice(0, names.indexOf('0006_compliance'));
    for (const name of before) await migrations[name]?.up(database.db);
    for (const id of ['ws_old1', 'ws_old2']) {
      await database.db
        .insertInto('workspaces')
        .values({ id, name: id, plan: 'starter', created_at: 1, updated_at: 1 })
        .execute();
    }
    const migratedFrom = Date.now();
    await migrations['0006_compliance']?.up(database.db);
    const migratedTo = Date.now();

    const controls = await database.db
      .selectFrom('controls')
      .select(['id', 'workspace_id', 'reference', 'title', 'theme', 'position', 'status'])
      .orderBy('workspace_id')
      .orderBy('position')
      .execute();
    const expected = annexA.map((control, position) => ({
      reference: `A.${control.id}`,
      title: control.title,
      theme: control.theme,
      position,
      status: 'not_started',
    }));
    for (const workspaceId of ['ws_old1', 'ws_old2']) {
      const seeded = controls.filter((control) => control.workspace_id === workspaceId);
      assert.deepEqual(
        seeded.map(({ id: _id, workspace_id: _workspace, ...rest }) => rest),
        expected,
      );
      const ids = seeded.map((control) => control.id);
      assert.deepEqual([...ids].sort(), ids, 'ids sort in the order the controls were seeded');
    }
    const liveShape = new RegExp(
      `^ctl_[0-9a-hjkmnp-tv-z]{${newId('ctl', new Date('2026-01-01T00:00:00.000Z')).length - 'ctl_'.length}}$`,
    );
    for (const { id } of controls) assert.match(id, liveShape);
    assert.equal(new Set(controls.map((control) => control.id)).size, controls.length);
    const times = await database.db.selectFrom('controls').select(['created_at', 'updated_at']).execute();
    for (const time of times.flatMap((row) => [Number(row.created_at), Number(row.updated_at)])) {
      // The database's clock, to the second on SQLite.
      assert.ok(
        time >= migratedFrom - 1000 && time <= migratedTo,
        `seeded at ${time}, migrated ${migratedFrom}..${migratedTo}`,
      );
    }
  });
});

describe(`order page keys on ${testDialect}`, () => {
  it('are kept only as hashes after the migration, and the links published before still open', async (t) => {
    const database = await createTestDatabase({ migrate: false });
    t.after(() => database.close());
    const names = Object.keys(migrations);
    for (const name of names.slice(0, names.indexOf('0021_order_page_key_hashes')))
      await migrations[name]?.up(database.db);
    const publishedKey = randomBytes(32).toString('base64url');
    // biome-ignore lint/suspicious/noExplicitAny: the schema as it was before the migration
    const before = database.db as Kysely<any>;
    const shared = { channel: 'acp', item_id: 'svc-pro-annual', plan: 'pro', term: 'year', amount: 29_900 };
    await before
      .insertInto('payment_attempts')
      .values({
        id: 'att_old',
        attempt_key: 'acp:old:1',
        ...shared,
        currency: 'usd',
        buyer_email: 'old@example.com',
        token_hash: 'x',
        order_id: 'ord_old',
        psp_idempotency_key: 'svc_att_old',
        status: 'completed',
        created_at: 1,
        updated_at: 1,
      })
      .execute();
    await before
      .insertInto('orders')
      .values({
        id: 'ord_old',
        attempt_id: 'att_old',
        ...shared,
        currency: 'usd',
        buyer_email: 'old@example.com',
        payment_intent_id: 'pi_old',
        workspace_id: 'ws_old',
        term_starts_at: 1,
        term_ends_at: 2,
        page_key: publishedKey,
        created_at: 1,
      })
      .execute();
    await migrations['0021_order_page_key_hashes']?.up(database.db);

    const row = await database.db
      .selectFrom('orders')
      .selectAll()
      .where('id', '=', 'ord_old')
      .executeTakeFirst();
    assert.ok(row);
    assert.ok(!Object.values(row).some((value) => String(value).includes(publishedKey)));
    const links = createOrderLinks('http://svc.test', randomBytes(32).toString('base64url'));
    assert.equal((await findOrderByPageLink(database.db, links, 'ord_old', publishedKey))?.id, 'ord_old');
    const derived = new URL(links.url('ord_old')).searchParams.get('key') ?? '';
    assert.equal((await findOrderByPageLink(database.db, links, 'ord_old', derived))?.id, 'ord_old');
    const other = randomBytes(32).toString('base64url');
    assert.equal(await findOrderByPageLink(database.db, links, 'ord_old', other), undefined);
  });
});

describe(`transactions on ${testDialect}`, () => {
  it('commit everything together or nothing', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const row = (id: string) => ({ id, name: id, plan: 'free' as const, created_at: 1, updated_at: 1 });
    await assert.rejects(
      inTransaction(database.db, async (trx) => {
        await trx.insertInto('workspaces').values(row('ws_a')).execute();
        throw new Error('boom');
      }),
      /boom/,
    );
    await inTransaction(database.db, async (trx) => {
      await trx.insertInto('workspaces').values(row('ws_b')).execute();
      await inTransaction(trx, (nested) => nested.insertInto('workspaces').values(row('ws_c')).execute());
    });
    const ids = (await database.db.selectFrom('workspaces').select('id').orderBy('id').execute()).map(
      (r) => r.id,
    );
    assert.deepEqual(ids, ['ws_b', 'ws_c']);
  });
});

describe('SQLite file database', () => {
  it('uses WAL, enforces foreign keys, and keeps data across reopen', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-sqlite-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'nested', 'svc.sqlite');
    const first = openDatabase({ kind: 'sqlite', file });
    await migrateToLatest(first.db);
    const mode = await sql<{ journal_mode: string }>`pragma journal_mode`.execute(first.db);
    assert.equal(mode.rows[0]?.journal_mode, 'wal');
    await assert.rejects(
      first.db
        .insertInto('workspace_members')
        .values({ id: 'm1', workspace_id: 'missing', email: 'a@b.c', role: 'owner', created_at: 1 })
        .execute(),
      /FOREIGN KEY/,
    );
    await first.db
      .insertInto('workspaces')
      .values({ id: 'ws_1', name: 'x', plan: 'free', created_at: 1, updated_at: 1 })
      .execute();
    await first.close();
    const second = openDatabase({ kind: 'sqlite', file });
    t.after(() => second.close());
    assert.deepEqual(await migrateToLatest(second.db), []);
    assert.equal((await second.db.selectFrom('workspaces').selectAll().execute()).length, 1);
  });
});
