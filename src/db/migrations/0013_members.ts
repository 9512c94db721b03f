import type { Kysely } from 'kysely';

/**
 * Members managed in the app: who sent an invitation (null for the owner invitation of a
 * purchase or the CLI), and invitations an owner or admin withdrew (or whose member was removed
 * or left), which neither their link nor a request for a fresh one can bring back.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('workspace_invitations')
    .addColumn('invited_by_user_id', 'text', (c) => c.references('users.id').onDelete('set null'))
    .execute();
  await db.schema.alterTable('workspace_invitations').addColumn('withdrawn_at', 'bigint').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('workspace_invitations').dropColumn('withdrawn_at').execute();
  await db.schema.alterTable('workspace_invitations').dropColumn('invited_by_user_id').execute();
}
