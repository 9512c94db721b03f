import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { type DatabaseHandle, type OpenDatabaseOptions, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

/**
 * The suite runs on SQLite by default; with TEST_DATABASE_URL set to a postgres URL it runs on
 * PostgreSQL instead, each test database a fresh database of its own on that server (dropped on
 * close).
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
export const testDialect = TEST_DATABASE_URL ? 'postgres' : 'sqlite';

export interface TestDatabase extends DatabaseHandle {
  /** Another handle on the same data, as a second app instance would have. */
  reopen(): DatabaseHandle;
  /** How another process opens the same data (`DATABASE_URL`); absent in memory. */
  connection?: { url: string };
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
  return createPostgresTestDatabase(TEST_DATABASE_URL, migrate, onStatement);
}

/**
 * A database of its own on the server of TEST_DATABASE_URL (dropped on close), cloned from a
 * template the migrations were run into once: migrating each test's database took about 0.5 s,
 * the clone takes about 0.1 s. The template is named after the migrations' source, so a changed
 * migration makes a new one, and it is built under a name of its own and renamed when finished,
 * so no test process ever clones a half-built one.
 */
async function createPostgresTestDatabase(
  serverUrl: string,
  migrate: boolean,
  onStatement: OpenDatabaseOptions['onStatement'],
): Promise<TestDatabase> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = openDatabase({ kind: 'postgres', url: serverUrl });
  try {
    const template = migrate ? await migratedTemplate(admin, serverUrl) : 'template0';
    await sql`create database ${sql.id(name)} template ${sql.id(template)}`.execute(admin.db);
  } finally {
    await admin.close();
  }
  const url = databaseUrl(serverUrl, name);
  const open = () => openDatabase({ kind: 'postgres', url }, { onStatement });
  const handle = open();
  const close = async () => {
    await handle.close();
    const cleanup = openDatabase({ kind: 'postgres', url: serverUrl });
    await sql`drop database if exists ${sql.id(name)} with (force)`.execute(cleanup.db);
    await cleanup.close();
  };
  return { ...handle, reopen: open, close, connection: { url } };
}

function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.href;
}

const MIGRATION_SOURCES = [
  path.join(import.meta.dirname, '../../src/db/migrate.ts'),
  ...readdirSync(path.join(import.meta.dirname, '../../src/db/migrations'))
    .sort()
    .map((file) => path.join(import.meta.dirname, '../../src/db/migrations', file)),
];

/** The name of a database holding exactly the current migrations, made if there is none yet. */
async function migratedTemplate(admin: DatabaseHandle, serverUrl: string): Promise<string> {
  const digest = createHash('sha256');
  for (const file of MIGRATION_SOURCES) digest.update(readFileSync(file));
  const template = `svc_test_template_${digest.digest('hex').slice(0, 16)}`;
  const exists = async () =>
    (await sql`select 1 from pg_database where datname = ${template}`.execute(admin.db)).rows.length > 0;
  if (await exists()) return template;
  // Test processes on one server take turns building it; the lock is the session's, so it goes
  // with a process that dies holding it.
  await admin.db.connection().execute(async (session) => {
    await sql`select pg_advisory_lock(hashtext(${template}))`.execute(session);
    try {
      if (await exists()) return;
      const building = `${template}_building_${randomBytes(4).toString('hex')}`;
      await sql`create database ${sql.id(building)}`.execute(session);
      const fresh = openDatabase({ kind: 'postgres', url: databaseUrl(serverUrl, building) });
      try {
        await migrateToLatest(fresh.db);
      } catch (error) {
        await fresh.close();
        await sql`drop database ${sql.id(building)}`.execute(session);
        throw error;
      }
      await fresh.close();
      await sql`alter database ${sql.id(building)} rename to ${sql.id(template)}`.execute(session);
    } finally {
      await sql`select pg_advisory_unlock(hashtext(${template}))`.execute(session);
    }
  });
  return template;
}
