import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * PostgreSQL only: every statement that writes a table whose rows an instance may serve from
 * memory (`GET /api/v1/me`: workspaces and their terms; `GET /api/v1/controls`: controls) notifies
 * the `svc_reads` channel when its transaction commits, so that the other instances stop serving
 * what they kept (src/db/changes.ts). Whichever module, instance or process writes, the CLI
 * included. One notification per statement; PostgreSQL folds identical ones of a transaction into
 * one. A read kept from another table needs its table added here by a later migration.
 */
const TABLES = ['workspaces', 'workspace_terms', 'controls'] as const;

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`
    create function reads_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('svc_reads', '');
      return null;
    end $$`.execute(db);
  for (const table of TABLES) {
    await sql`
      create trigger ${sql.raw(`${table}_reads_notify`)}
      after insert or update or delete or truncate on ${sql.table(table)}
      for each statement execute function reads_notify()`.execute(db);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const table of TABLES) {
    await sql`drop trigger ${sql.raw(`${table}_reads_notify`)} on ${sql.table(table)}`.execute(db);
  }
  await sql`drop function reads_notify()`.execute(db);
}
