import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type SqliteDatabase,
  SqliteDialect,
  SqliteDriver,
  type SqliteStatement,
} from 'kysely';

/** Distinct SQL texts kept prepared; the service issues far fewer, so the cache never churns. */
const STATEMENT_CACHE_SIZE = 1000;

/**
 * Adapts `node:sqlite` to the better-sqlite3 shape Kysely's SQLite dialect expects. Kysely asks for
 * a statement per query; preparing is a large share of a small query's cost, so statements are
 * kept by SQL text and reused.
 */
function wrapDatabase(db: DatabaseSync): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => db.close(),
    prepare(sql: string): SqliteStatement {
      let prepared = statements.get(sql);
      if (prepared) return prepared;
      const statement = db.prepare(sql);
      prepared = {
        reader: statement.columns().length > 0,
        all: (parameters) => statement.all(...toSqliteValues(parameters)),
        run: (parameters) => statement.run(...toSqliteValues(parameters)),
        iterate: (parameters) => statement.iterate(...toSqliteValues(parameters)),
      };
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
      statements.set(sql, prepared);
      return prepared;
    },
  };
}

function toSqliteValues(parameters: ReadonlyArray<unknown>): SQLInputValue[] {
  return parameters.map((value) => {
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (value instanceof Date) return value.getTime();
    return value as SQLInputValue;
  });
}

/**
 * Writers take the lock at BEGIN (IMMEDIATE), so a transaction that reads then writes never
 * fails half-way with SQLITE_BUSY when a second process (the CLI, a restarted worker) shares the file;
 * it waits for the busy timeout instead.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

class NodeSqliteDialect extends SqliteDialect {
  readonly #database: SqliteDatabase;

  constructor(database: SqliteDatabase) {
    super({ database });
    this.#database = database;
  }

  override createDriver(): Driver {
    return new ImmediateSqliteDriver({ database: this.#database });
  }
}

export function createSqliteDialect(file: string): SqliteDialect {
  if (file !== ':memory:') mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: true, timeout: 5000 });
  if (file !== ':memory:') db.exec('pragma journal_mode = wal');
  db.exec('pragma synchronous = normal');
  return new NodeSqliteDialect(wrapDatabase(db));
}
