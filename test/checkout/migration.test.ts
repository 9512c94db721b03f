// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { migrateToLatest, migrations } from '../../src/db/migrate.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';

const GUARDS = '0009_checkout_guards';

describe(`migration ${GUARDS} on ${testDialect}`, () => {
  it('moves sessions whose latest payment is under way or unapplied to paying, and leaves the others', async (t) => {
    const database = await createTestDatabase({ migrate: false });
    t.after(() => database.close());
    const db = database.db;
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < GUARDS));
    const schema =
      testDialect === 'postgres'
        ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
        : undefined;
    const migrated = await new Migrator({
      db,
      provider: { getMigrations: async () => before },
      ...(schema ? { migrationTableSchema: schema } : {}),
    }).migrateToLatest();
    assert.equal(migrated.error, undefined);

    const session = (id: string, status: string, attemptCount: number) =>
      sql`insert into checkout_sessions (id, id_hash, channel, status, item_id, buyer_email, attempt_count, expires_at, created_at, updated_at)
          values (${id}, ${`hash_${id}`}, 'acp', ${status}, 'svc-pro-monthly', 'a@example.com', ${attemptCount}, 0, 0, 0)`.execute(
        db,
      );
    const attempt = (sessionId: string, number: number, status: string) =>
      sql`insert into payment_attempts (id, attempt_key, channel, item_id, plan, term, amount, currency, buyer_email, token_hash, order_id, psp_idempotency_key, status, created_at, updated_at)
          values (${`pa_${sessionId}_${number}`}, ${`acp:${sessionId}:${number}`}, 'acp', 'svc-pro-monthly', 'pro', 'month', 29900, 'usd', 'a@example.com', 'h', ${`ord_${sessionId}_${number}`}, ${`svc_${sessionId}_${number}`}, ${status}, 0, 0)`.execute(
        db,
      );
    await session('chk_pending', 'ready', 1);
    await attempt('chk_pending', 1, 'pending');
    await session('chk_charged_expired', 'expired', 1);
    await attempt('chk_charged_expired', 1, 'charged');
    await session('chk_declined', 'ready', 2);
    await attempt('chk_declined', 1, 'declined');
    await attempt('chk_declined', 2, 'declined');
    await session('chk_unrecorded', 'ready', 2);
    await attempt('chk_unrecorded', 1, 'declined');
    await session('chk_fresh', 'not_ready', 0);

    assert.deepEqual(
      await migrateToLatest(db),
      Object.keys(migrations).filter((name) => name >= GUARDS),
    );
    const rows = await db
      .selectFrom('checkout_sessions')
      .select(['id', 'status', 'version'])
      .orderBy('id')
      .execute();
    assert.deepEqual(
      rows.map((row) => ({ ...row })),
      [
        { id: 'chk_charged_expired', status: 'paying', version: 1 },
        { id: 'chk_declined', status: 'ready', version: 0 },
        { id: 'chk_fresh', status: 'not_ready', version: 0 },
        { id: 'chk_pending', status: 'paying', version: 1 },
        { id: 'chk_unrecorded', status: 'ready', version: 0 },
      ],
    );
  });
});
