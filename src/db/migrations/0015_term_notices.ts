import type { Kysely } from 'kysely';

/**
 * The emails sent about a term's end, one row per term and kind (7 days before, 1 day before,
 * moved to Free). The primary key makes each send happen once: the row is written in the
 * transaction that queues the emails, so a second instance or a restart finds it and sends nothing.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('term_notices')
    .addColumn('term_id', 'text', (c) => c.notNull().references('workspace_terms.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('recipients', 'integer', (c) => c.notNull())
    .addColumn('sent_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('term_notices_pk', ['term_id', 'kind'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('term_notices').execute();
}
