import type { Kysely } from 'kysely';

/**
 * Time-boxed auditor access: a membership (and the invitation that leads to it) of role `auditor`
 * carries the instant its access ends; null for every other role.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workspace_members').addColumn('access_until', 'bigint').execute();
  await db.schema.alterTable('workspace_invitations').addColumn('access_until', 'bigint').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workspace_invitations').dropColumn('access_until').execute();
  await db.schema.alterTable('workspace_members').dropColumn('access_until').execute();
}
