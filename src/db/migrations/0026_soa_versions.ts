import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Approved versions of the Statement of Applicability: one row per version (numbered per
 * workspace, who approved and when, the SHA-256 of its content and the frozen rows), and the files
 * rendered at approval, kept as bytes (bytea on PostgreSQL, blob on SQLite) so they never change.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  const bytes = db.getExecutor().adapter instanceof PostgresAdapter ? sql`bytea` : sql`blob`;
  await db.schema
    .createTable('soa_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('approved_at', 'bigint', (c) => c.notNull())
    .addColumn('approved_by', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('document', 'text', (c) => c.notNull())
    .addUniqueConstraint('soa_versions_number', ['workspace_id', 'number'])
    .execute();
  await db.schema
    .createTable('soa_version_files')
    .addColumn('version_id', 'text', (c) => c.notNull().references('soa_versions.id').onDelete('cascade'))
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('sha256', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('content', bytes, (c) => c.notNull())
    .addPrimaryKeyConstraint('soa_version_files_pk', ['version_id', 'format'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('soa_version_files').execute();
  await db.schema.dropTable('soa_versions').execute();
}
