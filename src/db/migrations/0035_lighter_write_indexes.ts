import type { Kysely } from 'kysely';

/**
 * Two indexes every purchase wrote for nothing. `workspace_invitations_workspace` (workspace_id)
 * duplicates the first column of `workspace_invitations_address` (workspace_id, email,
 * created_at), which serves every lookup by workspace and the cascade from `workspaces`.
 * `jobs_key_status` is read only for jobs that name a concurrency key (webhook deliveries); as a
 * partial index it no longer takes an entry, moved at each change of status, for every other job
 * (the owner invitation's email among them). SQLite runs DDL outside a transaction, so the drops
 * tolerate an index a half-run earlier attempt already dropped.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('workspace_invitations_workspace').ifExists().execute();
  await db.schema.dropIndex('jobs_key_status').ifExists().execute();
  await db.schema
    .createIndex('jobs_key_status')
    .on('jobs')
    .columns(['concurrency_key', 'status'])
    .where('concurrency_key', 'is not', null)
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('jobs_key_status').ifExists().execute();
  await db.schema.createIndex('jobs_key_status').on('jobs').columns(['concurrency_key', 'status']).execute();
  await db.schema
    .createIndex('workspace_invitations_workspace')
    .on('workspace_invitations')
    .column('workspace_id')
    .execute();
}
