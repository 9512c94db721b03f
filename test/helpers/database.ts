import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
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
    await migrateToLatest(handle.db).catch(async (error) => {
      await close();
      throw error;
    });
  return { ...handle, reopen: open, close, connection: { url: TEST_DATABASE_URL, searchPath: schema } };
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
