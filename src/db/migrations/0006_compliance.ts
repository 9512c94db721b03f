import { randomBytes } from 'node:crypto';
import { type Kysely, sql } from 'kysely';

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
  const now = await databaseNow(db);
  const nextControlId = idsAt('ctl', now);
  for (const { id } of workspaces) {
    await db
      .insertInto('controls')
      .values(
        ANNEX_A_CONTROLS.map(([reference, title, theme], position) => ({
          id: nextControlId(),
          workspace_id: id,
          reference: `A.${reference}`,
          title,
          theme,
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

/**
 * The database's clock in epoch milliseconds: a migration cannot be handed the app's clock (it
 * imports no live code), and the moment it ran is the database's moment. `current_timestamp` is a
 * Date from PostgreSQL and `YYYY-MM-DD HH:MM:SS` (UTC) text from SQLite.
 */
// biome-ignore lint/suspicious/noExplicitAny: migrations are frozen in time
async function databaseNow(db: Kysely<any>): Promise<number> {
  const { rows } = await sql<{ now: Date | string }>`select current_timestamp as now`.execute(db);
  const now = rows[0]?.now;
  if (now instanceof Date) return now.getTime();
  const parsed = Date.parse(`${String(now).replace(' ', 'T')}Z`);
  if (Number.isNaN(parsed)) throw new Error(`the database's current_timestamp is unreadable: ${String(now)}`);
  return parsed;
}

const CROCKFORD = '0123456789abcdefghjkmnpqrstvwxyz';

/**
 * Record ids as the app made them when this migration was written (`prefix_` + 48-bit milliseconds +
 * 80 bits, Crockford base32), counting up from a random start so they sort in the order made.
 */
function idsAt(prefix: string, at: number): () => string {
  let counter = BigInt(`0x${randomBytes(10).toString('hex')}`);
  return () => {
    const bits = ((BigInt(at) << 80n) | (counter++ & ((1n << 80n) - 1n))) << 2n;
    let encoded = '';
    for (let shift = 125n; shift >= 0n; shift -= 5n) encoded += CROCKFORD[Number((bits >> shift) & 31n)];
    return `${prefix}_${encoded}`;
  };
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

/** ISO/IEC 27001:2022 Annex A as this migration seeded it: reference, title, theme. */
const ANNEX_A_CONTROLS: ReadonlyArray<readonly [string, string, string]> = [
  ['5.1', 'Policies for information security', 'organizational'],
  ['5.2', 'Information security roles and responsibilities', 'organizational'],
  ['5.3', 'Segregation of duties', 'organizational'],
  ['5.4', 'Management responsibilities', 'organizational'],
  ['5.5', 'Contact with authorities', 'organizational'],
  ['5.6', 'Contact with special interest groups', 'organizational'],
  ['5.7', 'Threat intelligence', 'organizational'],
  ['5.8', 'Information security in project management', 'organizational'],
  ['5.9', 'Inventory of information and other associated assets', 'organizational'],
  ['5.10', 'Acceptable use of information and other associated assets', 'organizational'],
  ['5.11', 'Return of assets', 'organizational'],
  ['5.12', 'Classification of information', 'organizational'],
  ['5.13', 'Labelling of information', 'organizational'],
  ['5.14', 'Information transfer', 'organizational'],
  ['5.15', 'Access control', 'organizational'],
  ['5.16', 'Identity management', 'organizational'],
  ['5.17', 'Authentication information', 'organizational'],
  ['5.18', 'Access rights', 'organizational'],
  ['5.19', 'Information security in supplier relationships', 'organizational'],
  ['5.20', 'Addressing information security within supplier agreements', 'organizational'],
  ['5.21', 'Managing information security in the ICT supply chain', 'organizational'],
  ['5.22', 'Monitoring, review and change management of supplier services', 'organizational'],
  ['5.23', 'Information security for use of cloud services', 'organizational'],
  ['5.24', 'Information security incident management planning and preparation', 'organizational'],
  ['5.25', 'Assessment and decision on information security events', 'organizational'],
  ['5.26', 'Response to information security incidents', 'organizational'],
  ['5.27', 'Learning from information security incidents', 'organizational'],
  ['5.28', 'Collection of evidence', 'organizational'],
  ['5.29', 'Information security during disruption', 'organizational'],
  ['5.30', 'ICT readiness for business continuity', 'organizational'],
  ['5.31', 'Legal, statutory, regulatory and contractual requirements', 'organizational'],
  ['5.32', 'Intellectual property rights', 'organizational'],
  ['5.33', 'Protection of records', 'organizational'],
  ['5.34', 'Privacy and protection of PII', 'organizational'],
  ['5.35', 'Independent review of information security', 'organizational'],
  ['5.36', 'Compliance with policies, rules and standards for information security', 'organizational'],
  ['5.37', 'Documented operating procedures', 'organizational'],
  ['6.1', 'Screening', 'people'],
  ['6.2', 'Terms and conditions of employment', 'people'],
  ['6.3', 'Information security awareness, education and training', 'people'],
  ['6.4', 'Disciplinary process', 'people'],
  ['6.5', 'Responsibilities after termination or change of employment', 'people'],
  ['6.6', 'Confidentiality or non-disclosure agreements', 'people'],
  ['6.7', 'Remote working', 'people'],
  ['6.8', 'Information security event reporting', 'people'],
  ['7.1', 'Physical security perimeters', 'physical'],
  ['7.2', 'Physical entry', 'physical'],
  ['7.3', 'Securing offices, rooms and facilities', 'physical'],
  ['7.4', 'Physical security monitoring', 'physical'],
  ['7.5', 'Protecting against physical and environmental threats', 'physical'],
  ['7.6', 'Working in secure areas', 'physical'],
  ['7.7', 'Clear desk and clear screen', 'physical'],
  ['7.8', 'Equipment siting and protection', 'physical'],
  ['7.9', 'Security of assets off-premises', 'physical'],
  ['7.10', 'Storage media', 'physical'],
  ['7.11', 'Supporting utilities', 'physical'],
  ['7.12', 'Cabling security', 'physical'],
  ['7.13', 'Equipment maintenance', 'physical'],
  ['7.14', 'Secure disposal or re-use of equipment', 'physical'],
  ['8.1', 'User endpoint devices', 'technological'],
  ['8.2', 'Privileged access rights', 'technological'],
  ['8.3', 'Information access restriction', 'technological'],
  ['8.4', 'Access to source code', 'technological'],
  ['8.5', 'Secure authentication', 'technological'],
  ['8.6', 'Capacity management', 'technological'],
  ['8.7', 'Protection against malware', 'technological'],
  ['8.8', 'Management of technical vulnerabilities', 'technological'],
  ['8.9', 'Configuration management', 'technological'],
  ['8.10', 'Information deletion', 'technological'],
  ['8.11', 'Data masking', 'technological'],
  ['8.12', 'Data leakage prevention', 'technological'],
  ['8.13', 'Information backup', 'technological'],
  ['8.14', 'Redundancy of information processing facilities', 'technological'],
  ['8.15', 'Logging', 'technological'],
  ['8.16', 'Monitoring activities', 'technological'],
  ['8.17', 'Clock synchronization', 'technological'],
  ['8.18', 'Use of privileged utility programs', 'technological'],
  ['8.19', 'Installation of software on operational systems', 'technological'],
  ['8.20', 'Networks security', 'technological'],
  ['8.21', 'Security of network services', 'technological'],
  ['8.22', 'Segregation of networks', 'technological'],
  ['8.23', 'Web filtering', 'technological'],
  ['8.24', 'Use of cryptography', 'technological'],
  ['8.25', 'Secure development life cycle', 'technological'],
  ['8.26', 'Application security requirements', 'technological'],
  ['8.27', 'Secure system architecture and engineering principles', 'technological'],
  ['8.28', 'Secure coding', 'technological'],
  ['8.29', 'Security testing in development and acceptance', 'technological'],
  ['8.30', 'Outsourced development', 'technological'],
  ['8.31', 'Separation of development, test and production environments', 'technological'],
  ['8.32', 'Change management', 'technological'],
  ['8.33', 'Test information', 'technological'],
  ['8.34', 'Protection of information systems during audit testing', 'technological'],
];
