import type { Kysely } from 'kysely';

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('payment_attempts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('attempt_key', 'text', (c) => c.notNull().unique())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('term', 'text', (c) => c.notNull())
    .addColumn('amount', 'integer', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('buyer_email', 'text', (c) => c.notNull())
    .addColumn('buyer_name', 'text')
    .addColumn('company_name', 'text')
    .addColumn('token_hash', 'text', (c) => c.notNull())
    .addColumn('token', 'text')
    .addColumn('order_id', 'text', (c) => c.notNull().unique())
    .addColumn('psp_idempotency_key', 'text', (c) => c.notNull().unique())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('payment_intent_id', 'text', (c) => c.unique())
    .addColumn('charged_at', 'bigint')
    .addColumn('decline_code', 'text')
    .addColumn('decline_message', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('payment_attempts_unfinished')
    .on('payment_attempts')
    .columns(['status', 'created_at'])
    .execute();

  await db.schema
    .createTable('orders')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('attempt_id', 'text', (c) => c.notNull().unique().references('payment_attempts.id'))
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('item_id', 'text', (c) => c.notNull())
    .addColumn('plan', 'text', (c) => c.notNull())
    .addColumn('term', 'text', (c) => c.notNull())
    .addColumn('amount', 'integer', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    .addColumn('buyer_email', 'text', (c) => c.notNull())
    .addColumn('payment_intent_id', 'text', (c) => c.notNull().unique())
    .addColumn('workspace_id', 'text', (c) => c.notNull())
    .addColumn('term_starts_at', 'bigint', (c) => c.notNull())
    .addColumn('term_ends_at', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('orders').execute();
  await db.schema.dropTable('payment_attempts').execute();
}
