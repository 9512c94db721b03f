import type { Kysely } from 'kysely';

/**
 * Agents follow their orders: `order_followers` holds, per order and protocol whose agent gets
 * order webhooks, the last state it was told (placed, invitation accepted, term ended), and
 * `ucp_orders` ties a UCP order to its checkout and to the platform whose signed request paid it.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('order_followers')
    .addColumn('order_id', 'text', (c) => c.notNull())
    .addColumn('follower', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('term_ends_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('order_followers_pk', ['order_id', 'follower'])
    .execute();
  await db.schema
    .createIndex('order_followers_due')
    .on('order_followers')
    .columns(['state', 'updated_at'])
    .execute();
  await db.schema
    .createTable('ucp_orders')
    .addColumn('order_id', 'text', (c) => c.primaryKey())
    .addColumn('checkout_id', 'text', (c) => c.notNull())
    .addColumn('platform_profile_url', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('acp_orders')
    .addColumn('order_id', 'text', (c) => c.primaryKey())
    .addColumn('checkout_session_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('acp_orders').execute();
  await db.schema.dropTable('ucp_orders').execute();
  await db.schema.dropTable('order_followers').execute();
}
