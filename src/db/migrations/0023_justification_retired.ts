import type { Kysely } from 'kysely';

/**
 * A control's applicability justification (why it is in or out of the Statement of
 * Applicability), and when evidence was retired: kept with its file, hidden from lists.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('controls').addColumn('justification', 'text').execute();
  await db.schema.alterTable('evidence').addColumn('retired_at', 'bigint').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('evidence').dropColumn('retired_at').execute();
  await db.schema.alterTable('controls').dropColumn('justification').execute();
}
