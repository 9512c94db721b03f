import type { Kysely } from 'kysely';

/**
 * The business's RFC 9421 signing keys (published in the UCP profile, rotated by an operator
 * command) and the UCP platforms an operator registered: their profile URL, the public keys their
 * signed requests are verified with, and where their order webhooks go.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('signing_keys')
    .addColumn('kid', 'text', (c) => c.primaryKey())
    .addColumn('public_jwk', 'text', (c) => c.notNull())
    .addColumn('private_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('retired_at', 'bigint')
    .addColumn('publish_until', 'bigint')
    .execute();
  await db.schema
    .createTable('ucp_platforms')
    .addColumn('profile_url', 'text', (c) => c.primaryKey())
    .addColumn('keys', 'text', (c) => c.notNull())
    .addColumn('order_webhook_url', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('ucp_platforms').execute();
  await db.schema.dropTable('signing_keys').execute();
}
