import type { Kysely } from 'kysely';

/**
 * The hosted checkouts started from the app's Billing page, one row per provider checkout
 * session. The unique provider id is what fulfilment is keyed on: the row moves from `open` to
 * `fulfilled` (or `expired`) once, with a conditional update.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('billing_checkouts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider_checkout_id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('term', 'text', (c) => c.notNull())
    .addColumn('amount', 'integer', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('started_by_user_id', 'text', (c) => c.notNull())
    .addColumn('started_by_email', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('order_id', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('billing_checkouts_workspace')
    .on('billing_checkouts')
    .columns(['workspace_id', 'status'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('billing_checkouts').execute();
}
