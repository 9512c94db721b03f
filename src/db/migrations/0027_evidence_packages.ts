import type { Kysely } from 'kysely';

/**
 * Evidence packages: one row per requested zip (its range, the build's progress, where the finished
 * file is stored and until when), and the SHA-256 of its download token, never the token.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('evidence_packages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('range_from', 'text')
    .addColumn('range_to', 'text')
    .addColumn('requested_by', 'text', (c) => c.notNull())
    .addColumn('download_token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('build_id', 'text')
    .addColumn('storage_name', 'text')
    .addColumn('files_total', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('files_done', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('bytes_total', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('bytes_done', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('size', 'bigint')
    .addColumn('sha256', 'text')
    .addColumn('error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('started_at', 'bigint')
    .addColumn('finished_at', 'bigint')
    .addColumn('expires_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('evidence_packages_list')
    .on('evidence_packages')
    .columns(['workspace_id', 'id'])
    .execute();
  await db.schema
    .createIndex('evidence_packages_expiry')
    .on('evidence_packages')
    .columns(['status', 'expires_at'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('evidence_packages').execute();
}
