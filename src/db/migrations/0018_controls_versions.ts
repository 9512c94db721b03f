import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * A version per workspace that moves with every write to its controls, bumped by triggers in the
 * writing transaction itself (whichever module, instance or process writes, the CLI included, and
 * foreign-key actions too). Readers that keep a page of controls compare it with one lookup; see
 * docs/decisions.md. No foreign key: a workspace's deletion deletes its controls, whose trigger
 * would then write a version of a workspace that is going away.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('controls_versions')
    .addColumn('workspace_id', 'text', (c) => c.primaryKey())
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute();
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    // One bump per statement and workspace, from the statement's transition table.
    await sql`
      create function controls_version_bump() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' then
          insert into controls_versions (workspace_id, version)
            select distinct workspace_id, 1 from old_rows
            on conflict (workspace_id) do update set version = controls_versions.version + 1;
        else
          insert into controls_versions (workspace_id, version)
            select distinct workspace_id, 1 from new_rows
            on conflict (workspace_id) do update set version = controls_versions.version + 1;
        end if;
        return null;
      end $$`.execute(db);
    for (const [event, table] of [
      ['insert', 'new table as new_rows'],
      ['update', 'new table as new_rows'],
      ['delete', 'old table as old_rows'],
    ] as const) {
      await sql`
        create trigger ${sql.raw(`controls_version_${event}`)} after ${sql.raw(event)} on controls
        referencing ${sql.raw(table)} for each statement execute function controls_version_bump()`.execute(
        db,
      );
    }
    return;
  }
  for (const [event, row] of [
    ['insert', 'new'],
    ['update', 'new'],
    ['delete', 'old'],
  ] as const) {
    await sql`
      create trigger ${sql.raw(`controls_version_${event}`)} after ${sql.raw(event)} on controls
      begin
        insert into controls_versions (workspace_id, version) values (${sql.raw(row)}.workspace_id, 1)
        on conflict (workspace_id) do update set version = version + 1;
      end`.execute(db);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  for (const event of ['insert', 'update', 'delete']) {
    await sql`drop trigger ${sql.raw(`controls_version_${event}`)}${sql.raw(
      db.getExecutor().adapter instanceof PostgresAdapter ? ' on controls' : '',
    )}`.execute(db);
  }
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`drop function controls_version_bump()`.execute(db);
  }
  await db.schema.dropTable('controls_versions').execute();
}
