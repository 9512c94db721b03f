import type { Kysely } from 'kysely';

/**
 * Instances announce themselves with a heartbeat, and the two leases a purchase request holds
 * (the Idempotency-Key's and the payment attempt's charge) name the instance holding them, so a
 * retry can take them over as soon as that instance is known gone instead of waiting them out.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('service_instances')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('started_at', 'bigint', (c) => c.notNull())
    .addColumn('heartbeat_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.alterTable('payment_attempts').addColumn('locked_by', 'text').execute();
  await db.schema.alterTable('idempotency_keys').addColumn('locked_by', 'text').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').dropColumn('locked_by').execute();
  await db.schema.alterTable('payment_attempts').dropColumn('locked_by').execute();
  await db.schema.dropTable('service_instances').execute();
}
