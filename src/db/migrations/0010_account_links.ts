import type { Kysely } from 'kysely';

/**
 * Emailed one-time links of an account: signing in, resetting the password, confirming a new
 * address. Only the SHA-256 of a link's secret is stored; `used_at` is set by the one request
 * that uses it.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('account_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('new_email', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('account_links_user')
    .on('account_links')
    .columns(['user_id', 'purpose'])
    .execute();
  await db.schema.createIndex('account_links_expires').on('account_links').column('expires_at').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('account_links').execute();
}
