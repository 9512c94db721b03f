import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type CompiledQuery, sql } from 'kysely';
import { type DatabaseHandle, type OpenDatabaseOptions, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

/**
 * The suite runs on SQLite by default; with TEST_DATABASE_URL set to a postgres URL it runs on
 * PostgreSQL instead, each test database in a fresh schema of its own (dropped on close).
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
export const testDialect = TEST_DATABASE_URL ? 'postgres' : 'sqlite';

export interface TestDatabase extends DatabaseHandle {
  /** Another handle on the same data, as a second app instance would have. */
  reopen(): DatabaseHandle;
  /** How another process opens the same data (`DATABASE_URL` and search path); absent in memory. */
  connection?: { url: string; searchPath?: string };
}

/**
 * `shared`: on SQLite, a file in a temporary directory (removed on close) instead of memory, so
 * other handles and child processes can open it too.
 */
export async function createTestDatabase(
  options: { migrate?: boolean; shared?: boolean; onStatement?: OpenDatabaseOptions['onStatement'] } = {},
): Promise<TestDatabase> {
  const migrate = options.migrate ?? true;
  const { onStatement } = options;
  if (!TEST_DATABASE_URL && options.shared) {
    const dir = mkdtempSync(path.join(tmpdir(), 'svc-test-'));
    const file = path.join(dir, 'svc.sqlite');
    const open = () => openDatabase({ kind: 'sqlite', file }, { onStatement });
    const handle = open();
    if (migrate) await migrateToLatest(handle.db);
    const close = async () => {
      await handle.close();
      rmSync(dir, { recursive: true, force: true });
    };
    return { ...handle, reopen: open, connection: { url: `sqlite:${file}` }, close };
  }
  if (!TEST_DATABASE_URL) {
    const file = ':memory:';
    const handle = openDatabase({ kind: 'sqlite', file }, { onStatement });
    if (migrate) await migrateToLatest(handle.db);
    return {
      ...handle,
      reopen: () => {
        throw new Error('an in-memory SQLite database cannot be opened twice; use a file');
      },
    };
  }
  const schema = `t_${randomBytes(6).toString('hex')}`;
  const admin = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL });
  await sql`create schema ${sql.id(schema)}`.execute(admin.db);
  await admin.close();
  const open = () =>
    openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL }, { searchPath: schema, onStatement });
  const handle = open();
  const close = async () => {
    await handle.close();
    const cleanup = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL });
    await sql`drop schema ${sql.id(schema)} cascade`.execute(cleanup.db);
    await cleanup.close();
  };
  if (migrate)
    await migrateSchema(handle.db, schema).catch(async (error) => {
      await close();
      throw error;
    });
  return { ...handle, reopen: open, close, connection: { url: TEST_DATABASE_URL, searchPath: schema } };
}

/** Stands for the schema's name in MIGRATIONS_SCRIPT. */
const SCHEMA_PLACEHOLDER = '__svc_test_schema__';
/**
 * The statements that migrated this process's first PostgreSQL test schema, as one script: the
 * next schemas run it in one round trip instead of some 185 (a tenth of the time on a busy host).
 */
let migrationsScript: string | undefined;

async function migrateSchema(db: DatabaseHandle['db'], schema: string): Promise<void> {
  if (migrationsScript !== undefined) {
    await sql.raw(migrationsScript.replaceAll(SCHEMA_PLACEHOLDER, schema)).execute(db);
    return;
  }
  const statements: CompiledQuery[] = [];
  const recording = openDatabase(
    { kind: 'postgres', url: TEST_DATABASE_URL ?? '' },
    { searchPath: schema, onStatement: (event) => statements.push(event.query) },
  );
  await migrateToLatest(recording.db).finally(() => recording.close());
  migrationsScript = asScript(statements, schema);
}

/** The statements with their parameters written in, or undefined when one cannot be written so. */
function asScript(statements: CompiledQuery[], schema: string): string | undefined {
  const texts: string[] = [];
  for (const statement of statements) {
    const values = statement.parameters.map(literal);
    if (values.some((value) => value === undefined)) return undefined;
    const text =
      values.length === 0
        ? statement.sql
        : statement.sql.replace(/\$(\d+)\b/g, (_, n) => values[Number(n) - 1] ?? '');
    if (text.includes(SCHEMA_PLACEHOLDER)) return undefined;
    texts.push(text.replaceAll(schema, SCHEMA_PLACEHOLDER));
  }
  return texts.join(';\n');
}

function literal(value: unknown): string | undefined {
  if (value === null) return 'null';
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'string' && !value.includes('\\') && !value.includes('\u0000'))
    return `'${value.replaceAll("'", "''")}'`;
  return undefined;
}

/** The DATABASE_URL a child process (the service, the CLI) opens the test's shared database with. */
export function processDatabaseUrl(database: TestDatabase): string {
  const connection = database.connection;
  if (!connection) throw new Error('an in-memory database cannot be shared with another process');
  if (!connection.searchPath) return connection.url;
  const url = new URL(connection.url);
  url.searchParams.set('options', `-c search_path=${connection.searchPath}`);
  return url.toString();
}
