import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('mpp_challenge_claims')
    .addColumn('challenge_id', 'text', (c) => c.primaryKey())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('mpp_challenge_claims_expiry')
    .on('mpp_challenge_claims')
    .column('expires_at')
    .execute();

  await db.schema
    .createTable('mpp_server_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mpp_server_secrets').execute();
  await db.schema.dropTable('mpp_challenge_claims').execute();
}
