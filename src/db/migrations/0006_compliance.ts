import type { Kysely } from 'kysely';
import annexA from '../../compliance/iso27001-2022-annex-a.json' with { type: 'json' };
import { newId } from '../../shared/ids.ts';

const workspaceColumn = 'workspace_id';

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('people')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn(workspaceColumn, 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('title', 'text')
    .addColumn('department', 'text')
    .addColumn('employment_status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('people_email', [workspaceColumn, 'email'])
    .execute();
  await db.schema.createIndex('people_list').on('people').columns([workspaceColumn, 'id']).execute();

  await db.schema
    .createTable('controls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn(workspaceColumn, 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('theme', 'text', (c) => c.notNull())
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.references('people.id').onDelete('set null'))
    .addColumn('notes', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('controls_reference', [workspaceColumn, 'reference'])
    .execute();
  await db.schema
    .createIndex('controls_list')
    .on('controls')
    .columns([workspaceColumn, 'position', 'id'])
    .execute();

  await db.schema
    .createTable('tasks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn(workspaceColumn, 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('due_date', 'text')
    .addColumn('assignee_id', 'text', (c) => c.references('people.id').onDelete('set null'))
    .addColumn('control_id', 'text', (c) => c.references('controls.id').onDelete('set null'))
    .addColumn('completed_at', 'bigint')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('tasks_list').on('tasks').columns([workspaceColumn, 'id']).execute();
  await db.schema
    .createIndex('tasks_by_status')
    .on('tasks')
    .columns([workspaceColumn, 'status', 'id'])
    .execute();

  await db.schema
    .createTable('evidence')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn(workspaceColumn, 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('url', 'text')
    .addColumn('file_name', 'text')
    .addColumn('file_size', 'bigint')
    .addColumn('file_sha256', 'text')
    .addColumn('content_type', 'text')
    .addColumn('storage_key', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('evidence_newest')
    .on('evidence')
    .columns([workspaceColumn, 'created_at', 'id'])
    .execute();

  await db.schema
    .createTable('evidence_controls')
    .addColumn('evidence_id', 'text', (c) => c.notNull().references('evidence.id').onDelete('cascade'))
    .addColumn('control_id', 'text', (c) => c.notNull().references('controls.id').onDelete('cascade'))
    .addColumn(workspaceColumn, 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('evidence_controls_pk', ['evidence_id', 'control_id'])
    .execute();
  // The evidence's created_at, copied (it never changes), so "evidence of a control, newest first"
  // is one ordered index range like the unfiltered list, whatever the size of the table.
  await db.schema
    .createIndex('evidence_controls_newest')
    .on('evidence_controls')
    .columns(['control_id', 'created_at', 'evidence_id'])
    .execute();

  await db.schema
    .createTable('risks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn(workspaceColumn, 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    .addColumn('likelihood', 'integer', (c) => c.notNull())
    .addColumn('impact', 'integer', (c) => c.notNull())
    .addColumn('score', 'integer', (c) => c.notNull())
    .addColumn('treatment', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('owner_id', 'text', (c) => c.references('people.id').onDelete('set null'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('risks_most_severe')
    .on('risks')
    .columns([workspaceColumn, 'score', 'id'])
    .execute();

  await db.schema
    .createTable('vendors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn(workspaceColumn, 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('website', 'text')
    .addColumn('description', 'text')
    .addColumn('risk_level', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('vendors_list').on('vendors').columns([workspaceColumn, 'id']).execute();

  await db.schema
    .createTable('policies')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn(workspaceColumn, 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('summary', 'text')
    .addColumn('approved_at', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addUniqueConstraint('policies_key', [workspaceColumn, 'key'])
    .execute();
  await db.schema.createIndex('policies_list').on('policies').columns([workspaceColumn, 'id']).execute();

  await seedExistingWorkspaces(db);
}

/** Workspaces made before this migration get the Annex A controls new ones are provisioned with. */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
async function seedExistingWorkspaces(db: Kysely<any>): Promise<void> {
  const workspaces = await db.selectFrom('workspaces').select('id').execute();
  const now = Date.now();
  for (const { id } of workspaces) {
    await db
      .insertInto('controls')
      .values(
        annexA.map((control, position) => ({
          id: newId('ctl'),
          workspace_id: id,
          reference: `A.${control.id}`,
          title: control.title,
          theme: control.theme,
          position,
          status: 'not_started',
          owner_id: null,
          notes: null,
          created_at: now,
          updated_at: now,
        })),
      )
      .execute();
  }
}

// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'policies',
    'vendors',
    'risks',
    'evidence_controls',
    'evidence',
    'tasks',
    'controls',
    'people',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
