import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Evidence files kept in the database (EVIDENCE_STORAGE=database): a row per file, its bytes in
 * chunks of at most 256 KiB (bytea on PostgreSQL, blob on SQLite). And an index from a stored
 * file's key to its evidence, for the orphan sweep of every backend.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  const bytes = db.getExecutor().adapter instanceof PostgresAdapter ? sql`bytea` : sql`blob`;
  await db.schema
    .createTable('stored_files')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('stored_file_chunks')
    .addColumn('name', 'text', (c) => c.notNull().references('stored_files.name').onDelete('cascade'))
    .addColumn('chunk_index', 'integer', (c) => c.notNull())
    .addColumn('bytes', bytes, (c) => c.notNull())
    .addPrimaryKeyConstraint('stored_file_chunks_pk', ['name', 'chunk_index'])
    .execute();
  await db.schema.createIndex('evidence_storage_key').on('evidence').column('storage_key').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('evidence_storage_key').execute();
  await db.schema.dropTable('stored_file_chunks').execute();
  await db.schema.dropTable('stored_files').execute();
}
