import type { Kysely } from 'kysely';

/**
 * What a change changed: `changes` holds `{field: {from, to}}` as JSON for the audited edits of
 * records (a control's status, a task's due date), so a record's page can show its history; and an
 * index to read one record's events, newest first.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('audit_events').addColumn('changes', 'text').execute();
  await db.schema
    .createIndex('audit_events_workspace_target')
    .on('audit_events')
    .columns(['workspace_id', 'target_id', 'id'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('audit_events_workspace_target').execute();
  await db.schema.alterTable('audit_events').dropColumn('changes').execute();
}
