import type { Kysely } from 'kysely';

/**
 * The order page: each order gets a 256-bit key (base64url), the secret part of the link the
 * checkout channels publish (`/orders/{id}?key=...`). Orders from before this migration get one
 * each here, so their links work too.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('orders')
    .addColumn('page_key', 'text', (c) => c.notNull().defaultTo(''))
    .execute();
  const orders: { id: string }[] = await db.selectFrom('orders').select('id').execute();
  for (const { id } of orders) {
    const key = Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(32))).toString('base64url');
    await db.updateTable('orders').set({ page_key: key }).where('id', '=', id).execute();
  }
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('orders').dropColumn('page_key').execute();
}
