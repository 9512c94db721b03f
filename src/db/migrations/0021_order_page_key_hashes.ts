import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';

/**
 * Order page keys leave the database: new links carry an HMAC of the order id under a secret kept
 * apart (`purchase_secrets`, or ORDER_LINK_SECRET), and the keys of links already published are
 * kept only as their SHA-256, so those links go on working while the table opens no page.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('purchase_secrets')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('secret', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('orders').addColumn('page_key_hash', 'text').execute();
  const orders: { id: string; page_key: string }[] = await db
    .selectFrom('orders')
    .select(['id', 'page_key'])
    .where('page_key', '<>', '')
    .execute();
  for (const { id, page_key } of orders) {
    const hash = createHash('sha256').update(page_key, 'utf8').digest('hex');
    await db.updateTable('orders').set({ page_key_hash: hash }).where('id', '=', id).execute();
  }
  await db.schema.alterTable('orders').dropColumn('page_key').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('orders')
    .addColumn('page_key', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  await db.schema.alterTable('orders').dropColumn('page_key_hash').execute();
  await db.schema.dropTable('purchase_secrets').execute();
}
