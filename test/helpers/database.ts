import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { sql } from 'kysely';
import { type DatabaseHandle, type OpenDatabaseOptions, openDatabase } from '../../src/db/database.ts';
import { migrateToLatest } from '../../src/db/migrate.ts';

/**
 * The suite runs on SQLite by default; with TEST_DATABASE_URL set to a postgres URL it runs on
 * PostgreSQL instead, each test database in a schema of its own: a fresh one, or, when migrated, one
 * a finished test of the same file left exactly as migrated and emptied (see `schemaPool`).
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
  const schema = (migrate ? await schemaPool.take() : undefined) ?? (await createSchema(migrate));
  const url = new URL(TEST_DATABASE_URL);
  // Each connection to the schema names it, so closing can tell whether any is still open.
  url.searchParams.set('application_name', schema);
  const open = () =>
    openDatabase({ kind: 'postgres', url: url.toString() }, { searchPath: schema, onStatement });
  const handle = open();
  const close = async () => {
    await handle.close();
    await (migrate ? schemaPool.giveBack(schema) : dropSchema(schema));
  };
  return { ...handle, reopen: open, close, connection: { url: url.toString(), searchPath: schema } };
}

async function withAdmin<T>(run: (db: DatabaseHandle['db']) => Promise<T>): Promise<T> {
  const admin = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL ?? '' });
  try {
    return await run(admin.db);
  } finally {
    await admin.close();
  }
}

async function createSchema(migrate: boolean): Promise<string> {
  const schema = `t_${randomBytes(6).toString('hex')}`;
  await withAdmin((db) => sql`create schema ${sql.id(schema)}`.execute(db));
  if (!migrate) return schema;
  const handle = openDatabase({ kind: 'postgres', url: TEST_DATABASE_URL ?? '' }, { searchPath: schema });
  const failure = await migrateToLatest(handle.db).then(
    () => undefined,
    (error: unknown) => error,
  );
  await handle.close();
  if (failure !== undefined) {
    await dropSchema(schema);
    throw failure;
  }
  return schema;
}

async function dropSchema(schema: string): Promise<void> {
  await withAdmin((db) => sql`drop schema ${sql.id(schema)} cascade`.execute(db));
}

/**
 * Migrated schemas a test has closed, emptied for the next test of the same file. Migrating a
 * fresh PostgreSQL schema and dropping it cost about 0.7 s a test; deleting the rows of a few dozen
 * small tables costs about 10 ms. A schema is reused only when it ends as it began: no connection
 * to it still open (every connection names its schema), the same tables, columns, indexes,
 * constraints, triggers and functions as when migrated, and its rows deleted with triggers off
 * (`session_replication_role`, which needs a superuser; without one every schema is dropped).
 * The file's last test drops what is left.
 */
const schemaPool = (() => {
  const idle: string[] = [];
  let migratedShape: string | undefined;
  let reusable = true;
  if (TEST_DATABASE_URL) after(() => Promise.all(idle.splice(0).map(dropSchema)));

  const shapeOf = async (db: DatabaseHandle['db'], schema: string) => {
    const { rows } = await sql<{ shape: string | null }>`
      select md5(string_agg(replace(item, ${schema}, ''), ',' order by item)) as shape from (
        select 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable
          || ' ' || coalesce(column_default, '') as item
          from information_schema.columns where table_schema = ${schema}
        union all select 'index ' || tablename || ' ' || replace(indexdef, ${schema}, '')
          from pg_indexes where schemaname = ${schema}
        union all select 'constraint ' || conname || ' ' || pg_get_constraintdef(c.oid)
          from pg_constraint c join pg_namespace n on n.oid = c.connamespace where n.nspname = ${schema}
        union all select 'trigger ' || t.tgname || ' ' || r.relname
          from pg_trigger t join pg_class r on r.oid = t.tgrelid join pg_namespace n on n.oid = r.relnamespace
          where n.nspname = ${schema} and not t.tgisinternal
        union all select 'function ' || p.proname || ' ' || md5(p.prosrc)
          from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = ${schema}
        union all select 'migration ' || name from ${sql.id(schema, 'kysely_migration')}
      ) items`.execute(db);
    return rows[0]?.shape ?? '';
  };

  const empty = async (db: DatabaseHandle['db'], schema: string) => {
    const { rows } = await sql<{ name: string }>`
      select tablename as name from pg_tables
      where schemaname = ${schema} and tablename not in ('kysely_migration', 'kysely_migration_lock')`.execute(
      db,
    );
    await db.transaction().execute(async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx);
      for (const { name } of rows) await sql`delete from ${sql.id(schema, name)}`.execute(trx);
    });
  };

  return {
    async take(): Promise<string | undefined> {
      const schema = idle.pop();
      if (schema !== undefined || migratedShape !== undefined) return schema;
      const fresh = await createSchema(true);
      migratedShape = await withAdmin((db) => shapeOf(db, fresh));
      return fresh;
    },
    async giveBack(schema: string): Promise<void> {
      const kept = await withAdmin(async (db) => {
        if (!reusable || idle.length >= 2) return false;
        const { rows } = await sql<{ open: number }>`
          select count(*)::int as open from pg_stat_activity where application_name = ${schema}`.execute(db);
        if ((rows[0]?.open ?? 1) > 0 || (await shapeOf(db, schema)) !== migratedShape) return false;
        try {
          await empty(db, schema);
          return true;
        } catch (error) {
          if ((error as { code?: string }).code !== '42501') throw error;
          reusable = false;
          return false;
        }
      });
      if (kept) idle.push(schema);
      else await dropSchema(schema);
    },
  };
})();

/** The DATABASE_URL a child process (the service, the CLI) opens the test's shared database with. */
export function processDatabaseUrl(database: TestDatabase): string {
  const connection = database.connection;
  if (!connection) throw new Error('an in-memory database cannot be shared with another process');
  if (!connection.searchPath) return connection.url;
  const url = new URL(connection.url);
  url.searchParams.set('options', `-c search_path=${connection.searchPath}`);
  return url.toString();
}
