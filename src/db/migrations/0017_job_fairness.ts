import type { Kysely } from 'kysely';

/**
 * Fair scheduling of jobs: a job may name a concurrency key (a webhook subscription), the runner
 * runs at most a few jobs of one key at once and claims round-robin across keys, and a key that
 * keeps failing is held back for a while (`job_key_holds`), so one dead receiver's backlog never
 * takes the slots another receiver's deliveries need.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('jobs').addColumn('concurrency_key', 'text').execute();
  await db.schema.createIndex('jobs_key_status').on('jobs').columns(['concurrency_key', 'status']).execute();
  await db.schema
    .createTable('job_key_holds')
    .addColumn('concurrency_key', 'text', (c) => c.primaryKey())
    .addColumn('failures', 'integer', (c) => c.notNull())
    .addColumn('held_until', 'bigint')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('job_key_holds').execute();
  await db.schema.dropIndex('jobs_key_status').execute();
  await db.schema.alterTable('jobs').dropColumn('concurrency_key').execute();
}
