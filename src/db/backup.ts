import { spawn } from 'node:child_process';
import { access, chmod, copyFile, link, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Kysely, sql } from 'kysely';
import type { DatabaseConfig } from '../config.ts';
import type { DatabaseHandle } from './database.ts';
import { openDatabase } from './database.ts';
import type { Database, Db } from './schema.ts';
import { createSqliteDialect } from './sqlite.ts';

/** A backup or restore that cannot go on, phrased as the one line an operator needs. */
export class BackupError extends Error {
  override name = 'BackupError';
}

/** The database's file in a backup directory, by dialect. */
export const DATABASE_BACKUP_FILES = { sqlite: 'svc.sqlite', postgres: 'svc.pgdump' } as const;

/**
 * Writes a consistent copy of the database into `dir` while the service keeps running, then calls
 * `whileConsistent` with a read-only view of exactly what the copy holds (the evidence files are
 * copied by what it names). SQLite: `VACUUM INTO`, and the view is the copy itself. PostgreSQL:
 * `pg_dump` of an exported snapshot, and the view is the snapshot, kept open until the work ends.
 */
export async function dumpDatabase<T>(
  database: DatabaseHandle,
  config: DatabaseConfig,
  dir: string,
  whileConsistent: (snapshot: Db) => Promise<T>,
): Promise<T> {
  const file = path.join(dir, DATABASE_BACKUP_FILES[config.kind]);
  if (config.kind === 'sqlite') {
    if (config.file === ':memory:') throw new BackupError('an in-memory database cannot be backed up');
    await sql`vacuum into ${file}`.execute(database.db);
    await chmod(file, 0o600);
    const snapshot = new Kysely<Database>({ dialect: createSqliteDialect(file, { readOnly: true }) });
    try {
      return await whileConsistent(snapshot);
    } finally {
      await snapshot.destroy();
    }
  }
  return database.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      const { rows } = await sql<{ snapshot: string }>`select pg_export_snapshot() as snapshot`.execute(trx);
      await runPostgresTool(
        'pg_dump',
        ['--format=custom', `--snapshot=${rows[0]?.snapshot}`, `--file=${file}`],
        config.url,
      );
      await chmod(file, 0o600);
      return whileConsistent(trx);
    });
}

/**
 * Puts the database file of a backup in `dir` in place of the configured database, which must not
 * exist yet (SQLite) or must have no tables (PostgreSQL). Refuses rather than overwrite anything.
 */
export async function restoreDatabase(config: DatabaseConfig, dir: string): Promise<void> {
  const file = path.join(dir, DATABASE_BACKUP_FILES[config.kind]);
  if (!(await exists(file))) throw new BackupError(`${file} is missing: not a ${config.kind} backup`);
  if (config.kind === 'sqlite') {
    if (config.file === ':memory:') throw new BackupError('cannot restore into an in-memory database');
    // A write-ahead log left beside the target (a crashed service's) would be replayed onto the
    // restored file when it is first opened, silently bringing back the old database's changes.
    const leftovers = ['', '-wal', '-shm', '-journal'].map((suffix) => `${config.file}${suffix}`);
    const present = (
      await Promise.all(leftovers.map(async (found) => ((await exists(found)) ? found : '')))
    ).filter(Boolean);
    if (present.length > 0) {
      throw new BackupError(
        `a database already exists at ${config.file} (${present.join(', ')}); restore into an empty DATA_DIR (or move all of them away first)`,
      );
    }
    await mkdir(path.dirname(config.file), { recursive: true, mode: 0o700 });
    // Copied beside the target and linked into place: a copy cut short never passes for a database,
    // and a database created meanwhile is never overwritten.
    const partial = `${config.file}.restoring`;
    await rm(partial, { force: true });
    await copyFile(file, partial);
    try {
      await link(partial, config.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      throw new BackupError(`a database appeared at ${config.file} during the restore; nothing was changed`);
    } finally {
      await rm(partial, { force: true });
    }
    return;
  }
  const tables = await countTables(config);
  if (tables > 0) {
    throw new BackupError(
      `the database of DATABASE_URL already has ${tables} tables; restore into a new, empty database`,
    );
  }
  await runPostgresTool('pg_restore', ['--no-owner', '--single-transaction', file], config.url);
}

async function countTables(config: Extract<DatabaseConfig, { kind: 'postgres' }>): Promise<number> {
  const database = openDatabase(config);
  try {
    const { rows } = await sql<{ tables: number }>`
      select count(*)::int as tables from information_schema.tables
      where table_schema not in ('pg_catalog', 'information_schema')`.execute(database.db);
    return rows[0]?.tables ?? 0;
  } finally {
    await database.close();
  }
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/**
 * Runs a PostgreSQL client program on the database of `url`, with arguments (never a shell). The
 * password goes in the environment, not on the command line other local users can read.
 */
function runPostgresTool(program: 'pg_dump' | 'pg_restore', args: string[], url: string): Promise<void> {
  const target = new URL(url);
  const password = decodeURIComponent(target.password);
  target.password = '';
  return new Promise((resolve, reject) => {
    const child = spawn(program, [...args, `--dbname=${target.href}`], {
      env: { ...process.env, ...(password ? { PGPASSWORD: password } : {}) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    child.on('error', (error: NodeJS.ErrnoException) => {
      reject(
        error.code === 'ENOENT'
          ? new BackupError(
              `${program} is not installed (PATH); install the PostgreSQL client tools of the server's major version or newer`,
            )
          : new BackupError(`${program} could not start: ${error.message}`),
      );
    });
    child.on('close', (code) => {
      if (code === 0) return resolve();
      const reason = stderr
        .split('\n')
        .map((line) => line.trim())
        .find((line) => line !== '');
      reject(new BackupError(`${program} failed (exit ${code}): ${reason ?? 'no message'}`));
    });
  });
}
