import type { Kysely } from 'kysely';

/**
 * People who sign in to the app: accounts, their sessions, the sign-in throttle; and, additively,
 * what the app needs of existing tables: the account a membership belongs to, revoked
 * invitations, and who created an API key and when it expires.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('email_key', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('last_seen_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('sessions_user').on('sessions').column('user_id').execute();
  await db.schema.createIndex('sessions_last_seen').on('sessions').column('last_seen_at').execute();

  await db.schema
    .createTable('auth_throttles')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('window_started_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('auth_throttles_window')
    .on('auth_throttles')
    .column('window_started_at')
    .execute();

  await db.schema
    .alterTable('workspace_members')
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .execute();
  await db.schema.createIndex('workspace_members_user').on('workspace_members').column('user_id').execute();
  await db.schema.alterTable('workspace_invitations').addColumn('revoked_at', 'bigint').execute();
  await db.schema
    .createIndex('workspace_invitations_address')
    .on('workspace_invitations')
    .columns(['workspace_id', 'email', 'created_at'])
    .execute();

  await db.schema.alterTable('api_keys').addColumn('created_by_user_id', 'text').execute();
  await db.schema.alterTable('api_keys').addColumn('expires_at', 'bigint').execute();
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('expires_at').execute();
  await db.schema.alterTable('api_keys').dropColumn('created_by_user_id').execute();
  await db.schema.dropIndex('workspace_invitations_address').execute();
  await db.schema.alterTable('workspace_invitations').dropColumn('revoked_at').execute();
  await db.schema.dropIndex('workspace_members_user').execute();
  await db.schema.alterTable('workspace_members').dropColumn('user_id').execute();
  for (const table of ['auth_throttles', 'sessions', 'users']) await db.schema.dropTable(table).execute();
}
