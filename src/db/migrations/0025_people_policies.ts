import type { Kysely } from 'kysely';

/**
 * People leave: `left_on` is the calendar date a person became former staff. Policies get a
 * Markdown body, numbered versions (the draft being edited and the approved ones, kept unchanged)
 * and the members' acknowledgements of an approved version.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('people').addColumn('left_on', 'text').execute();
  await db.schema
    .alterTable('policies')
    .addColumn('body', 'text', (c) => c.notNull().defaultTo(''))
    .execute();

  await db.schema
    .createTable('policy_versions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('policy_id', 'text', (c) => c.notNull().references('policies.id').onDelete('cascade'))
    .addColumn('number', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('summary', 'text')
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('approved_at', 'bigint')
    .addColumn('approved_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('policy_versions_number', ['policy_id', 'number'])
    .execute();
  await db.schema
    .createIndex('policy_versions_list')
    .on('policy_versions')
    .columns(['workspace_id', 'policy_id', 'id'])
    .execute();

  await db.schema
    .createTable('policy_acknowledgements')
    .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('policy_id', 'text', (c) => c.notNull().references('policies.id').onDelete('cascade'))
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull())
    .addColumn('acknowledged_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('policy_acknowledgements_pk', ['policy_id', 'version', 'user_id'])
    .execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('policy_acknowledgements').execute();
  await db.schema.dropTable('policy_versions').execute();
  await db.schema.alterTable('policies').dropColumn('body').execute();
  await db.schema.alterTable('people').dropColumn('left_on').execute();
}
