import { type Kysely, PostgresAdapter, sql } from 'kysely';
import { type Migration, type MigrationResult, Migrator } from 'kysely/migration';
import * as foundation from './migrations/0001_foundation.ts';
import * as purchase from './migrations/0002_purchase.ts';
import * as checkout from './migrations/0003_checkout.ts';
import * as mpp from './migrations/0004_mpp.ts';
import * as apiKeys from './migrations/0005_api_keys.ts';
import * as compliance from './migrations/0006_compliance.ts';
import * as webhooks from './migrations/0007_webhooks.ts';
import * as accounts from './migrations/0008_accounts.ts';
import * as checkoutGuards from './migrations/0009_checkout_guards.ts';
import * as accountLinks from './migrations/0010_account_links.ts';
import * as passkeys from './migrations/0011_passkeys.ts';
import * as audit from './migrations/0012_audit.ts';
import * as members from './migrations/0013_members.ts';
import * as orderPages from './migrations/0014_order_pages.ts';
import * as termNotices from './migrations/0015_term_notices.ts';
import * as billingCheckouts from './migrations/0016_billing_checkouts.ts';
import * as jobFairness from './migrations/0017_job_fairness.ts';
import * as controlsVersions from './migrations/0018_controls_versions.ts';
import * as storedFiles from './migrations/0020_stored_files.ts';
import * as orderPageKeyHashes from './migrations/0021_order_page_key_hashes.ts';
import * as auditChanges from './migrations/0022_audit_changes.ts';
import * as justificationRetired from './migrations/0023_justification_retired.ts';
import * as riskTreatmentVendorReview from './migrations/0024_risk_treatment_vendor_review.ts';
import * as peoplePolicies from './migrations/0025_people_policies.ts';
import * as soaVersions from './migrations/0026_soa_versions.ts';
import * as evidencePackages from './migrations/0027_evidence_packages.ts';
import * as auditorAccess from './migrations/0028_auditor_access.ts';
import * as oauth from './migrations/0029_oauth.ts';
import * as instanceHeartbeats from './migrations/0030_instance_heartbeats.ts';
import * as signingKeys from './migrations/0031_signing_keys.ts';
import * as orderFollowers from './migrations/0032_order_followers.ts';
import * as readsNotify from './migrations/0033_reads_notify.ts';
import * as controlsVersionsDropped from './migrations/0034_controls_versions_dropped.ts';
import * as lighterWriteIndexes from './migrations/0035_lighter_write_indexes.ts';

/** The one ordered set of migrations, for both dialects. Append only; never edit a shipped one. */
export const migrations: Record<string, Migration> = {
  '0001_foundation': foundation,
  '0002_purchase': purchase,
  '0003_checkout': checkout,
  '0004_mpp': mpp,
  '0005_api_keys': apiKeys,
  '0006_compliance': compliance,
  '0007_webhooks': webhooks,
  '0008_accounts': accounts,
  '0009_checkout_guards': checkoutGuards,
  '0010_account_links': accountLinks,
  '0011_passkeys': passkeys,
  '0012_audit': audit,
  '0013_members': members,
  '0014_order_pages': orderPages,
  '0015_term_notices': termNotices,
  '0016_billing_checkouts': billingCheckouts,
  '0017_job_fairness': jobFairness,
  '0018_controls_versions': controlsVersions,
  '0020_stored_files': storedFiles,
  '0021_order_page_key_hashes': orderPageKeyHashes,
  '0022_audit_changes': auditChanges,
  '0023_justification_retired': justificationRetired,
  '0024_risk_treatment_vendor_review': riskTreatmentVendorReview,
  '0025_people_policies': peoplePolicies,
  '0026_soa_versions': soaVersions,
  '0027_evidence_packages': evidencePackages,
  '0028_auditor_access': auditorAccess,
  '0029_oauth': oauth,
  '0030_instance_heartbeats': instanceHeartbeats,
  '0031_signing_keys': signingKeys,
  '0032_order_followers': orderFollowers,
  '0033_reads_notify': readsNotify,
  '0034_controls_versions_dropped': controlsVersionsDropped,
  '0035_lighter_write_indexes': lighterWriteIndexes,
};

// biome-ignore lint/suspicious/noExplicitAny: the migrator works on the untyped schema
async function migratorFor(db: Kysely<any>): Promise<Migrator> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) {
    return new Migrator({ db, provider: { getMigrations: async () => migrations } });
  }
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema;
  if (!schema) throw new Error('the PostgreSQL connection has no current schema (search_path)');
  return new Migrator({
    db: withTablesOfOneSchema(db, schema),
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
  });
}

/**
 * `db`, except that its table listing names only the tables of `schema`. Before migrating, Kysely
 * asks whether its migration tables exist by listing every column of every table of every schema:
 * slow on a database with many schemas (test databases, other tenants of a shared server), and
 * failing when another schema is dropped meanwhile. Left to itself, Kysely would also accept a
 * `kysely_migration` table found in any schema as its own.
 */
// biome-ignore lint/suspicious/noExplicitAny: the migrator works on the untyped schema
function withTablesOfOneSchema(db: Kysely<any>, schema: string): Kysely<any> {
  const tablesOfSchema = async () => {
    const { rows } = await sql<{ name: string }>`
      select table_name as name from information_schema.tables where table_schema = ${schema}`.execute(db);
    return rows.map(({ name }) => ({ name, schema, isView: false, columns: [] }));
  };
  const introspection = {
    ...db.introspection,
    getSchemas: () => db.introspection.getSchemas(),
    getTables: tablesOfSchema,
  };
  return new Proxy(db, {
    get(target, property) {
      if (property === 'introspection') return introspection;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Applies pending migrations (Kysely takes a lock, so concurrent instances apply each once). */
// biome-ignore lint/suspicious/noExplicitAny: the migrator works on the untyped schema
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  if ((await pendingMigrations(db)).length === 0) return [];
  const { error, results } = await (await migratorFor(db)).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r: MigrationResult) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * Names of migrations not yet applied; empty when the schema is current. Reads the migration table
 * of the connection's schema directly: Kysely's own listing first introspects every table of every
 * schema, which is slow on a database with many schemas and fails when one is dropped meanwhile.
 */
// biome-ignore lint/suspicious/noExplicitAny: the migrator works on the untyped schema
export async function pendingMigrations(db: Kysely<any>): Promise<string[]> {
  const applied = await appliedMigrations(db);
  return Object.keys(migrations).filter((name) => !applied.has(name));
}

// biome-ignore lint/suspicious/noExplicitAny: the migrator works on the untyped schema
async function appliedMigrations(db: Kysely<any>): Promise<Set<string>> {
  try {
    const rows = await db.selectFrom(MIGRATION_TABLE).select('name').execute();
    return new Set(rows.map((row: { name: string }) => row.name));
  } catch (error) {
    if (isMissingTable(error)) return new Set();
    throw error;
  }
}

const MIGRATION_TABLE = 'kysely_migration';

function isMissingTable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  // PostgreSQL's undefined_table, or SQLite's message for it.
  return (error as { code?: unknown }).code === '42P01' || /no such table/.test(error.message);
}

/** The newest migration applied to `db`, undefined when none is (an empty database). */
// biome-ignore lint/suspicious/noExplicitAny: the migrator works on the untyped schema
export async function latestAppliedMigration(db: Kysely<any>): Promise<string | undefined> {
  return [...(await appliedMigrations(db))].sort().at(-1);
}
