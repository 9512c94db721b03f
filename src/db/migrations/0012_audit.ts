import type { Kysely } from 'kysely';

/**
 * The audit log: who did what, when and from where. No foreign keys: an event outlives the account,
 * key or subscription it names, and `workspace_id` is null for account-level events (a failed
 * sign-in with an address that has no account).
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('actor_user_id', 'text')
    .addColumn('actor_api_key_id', 'text')
    .addColumn('actor_label', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text')
    .addColumn('target_id', 'text')
    .addColumn('target_label', 'text')
    .addColumn('ip', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  // The lists: a workspace's events newest first, all of them or one action's.
  await db.schema
    .createIndex('audit_events_workspace')
    .on('audit_events')
    .columns(['workspace_id', 'id'])
    .execute();
  await db.schema
    .createIndex('audit_events_workspace_action')
    .on('audit_events')
    .columns(['workspace_id', 'action', 'id'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('audit_events').execute();
}
