import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { up as createControlsVersions } from './0018_controls_versions.ts';

/**
 * Drops migration 0018's per-workspace version of the controls and its triggers. Kept pages of
 * controls are kept under the change feed (src/db/changes.ts; migration 0033 notifies on
 * PostgreSQL), which SQLite always has and PostgreSQL has while it listens; while it does not,
 * the page is read from the database each time, as `/me` is. On SQLite the insert trigger ran once
 * per row: the 93 controls seeded into a new workspace made 93 upserts of one row, about a third
 * of a purchase's provisioning transaction.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  for (const event of ['insert', 'update', 'delete']) {
    await sql`drop trigger if exists ${sql.raw(`controls_version_${event}`)}${sql.raw(postgres ? ' on controls' : '')}`.execute(
      db,
    );
  }
  if (postgres) await sql`drop function if exists controls_version_bump()`.execute(db);
  await db.schema.dropTable('controls_versions').ifExists().execute();
}

/** The table comes back empty: every workspace's version starts again from none. */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await createControlsVersions(db);
}
