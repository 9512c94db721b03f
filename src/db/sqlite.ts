import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync, type SQLInputValue, type SQLOutputValue, type StatementSync } from 'node:sqlite';
import {
  type DialectAdapter,
  type Driver,
  type SqliteDatabase,
  SqliteDialect,
  type SqliteStatement,
} from 'kysely';
import { type Checkpoints, startCheckpoints } from './checkpoint.ts';
import {
  GroupCommitDriver,
  isBusy,
  SharedConnectionSqliteAdapter,
  SQLITE_BUSY_TIMEOUT_MS,
  type TransactionState,
} from './sqlite-driver.ts';

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
      const columns = statement.columns().map((column) => column.name);
      prepared = columns.length > 0 ? reader(statement, columns) : writer(statement);
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.clear();
      statements.set(sql, prepared);
      return prepared;
    },
  };
}

type RowArray = SQLOutputValue[];

function writer(statement: StatementSync): SqliteStatement {
  return {
    reader: false,
    all: (parameters) => statement.all(...toSqliteValues(parameters)),
    run: (parameters) => statement.run(...toSqliteValues(parameters)),
    iterate: (parameters) => statement.iterate(...toSqliteValues(parameters)),
  };
}

/**
 * `node:sqlite` answers each row as a null-prototype object built key by key, a new hidden class
 * per row, and every mapper reading them goes megamorphic. Rows come as arrays instead and are
 * built here by one function per statement, so all rows of a statement share one shape.
 */
function reader(statement: StatementSync, columns: string[]): SqliteStatement {
  statement.setReturnArrays(true);
  const build = rowBuilder(columns);
  return {
    reader: true,
    all: (parameters) => (statement.all(...toSqliteValues(parameters)) as unknown as RowArray[]).map(build),
    run: (parameters) => statement.run(...toSqliteValues(parameters)),
    *iterate(parameters) {
      for (const row of statement.iterate(...toSqliteValues(parameters)))
        yield build(row as unknown as RowArray);
    },
  };
}

/**
 * An object literal of the statement's columns, compiled once. Names come from the SQL the service
 * itself wrote, but are still quoted as JSON strings; a duplicated name (the last one wins, as in
 * `node:sqlite`) or one named `__proto__` (which a literal would take as the prototype) is built
 * by assignment onto a null-prototype object instead.
 */
export function rowBuilder(columns: readonly string[]): (row: RowArray) => Record<string, SQLOutputValue> {
  if (new Set(columns).size !== columns.length || columns.includes('__proto__')) {
    return (row) => {
      const out: Record<string, SQLOutputValue> = Object.create(null);
      for (let i = 0; i < columns.length; i++) out[columns[i] as string] = row[i] as SQLOutputValue;
      return out;
    };
  }
  const fields = columns.map((name, i) => `${JSON.stringify(name)}: row[${i}]`).join(', ');
  return new Function('row', `return { ${fields} };`) as (row: RowArray) => Record<string, SQLOutputValue>;
}

function toSqliteValues(parameters: ReadonlyArray<unknown>): SQLInputValue[] {
  return parameters.map((value) => {
    if (typeof value === 'boolean') return value ? 1 : 0;
    if (value instanceof Date) return value.getTime();
    return value as SQLInputValue;
  });
}

export class NodeSqliteDialect extends SqliteDialect {
  readonly #database: SqliteDatabase;
  readonly #state: TransactionState;
  readonly #dataVersion: StatementSync;
  readonly #startCheckpoints: (() => Checkpoints) | undefined;

  constructor(
    database: SqliteDatabase,
    state: TransactionState,
    dataVersion: StatementSync,
    startCheckpoints?: () => Checkpoints,
  ) {
    super({ database });
    this.#database = database;
    this.#state = state;
    this.#dataVersion = dataVersion;
    this.#startCheckpoints = startCheckpoints;
  }

  /**
   * SQLite's `data_version`: it changes when another connection (another process) commits.
   * Undefined while another connection's lock keeps it from being read (another process
   * recovering the log): the busy timeout is 0 (`sqlite-driver.ts`), and this is asked on requests.
   */
  dataVersion(): number | undefined {
    try {
      return Number((this.#dataVersion.get() as unknown as SQLOutputValue[])[0]);
    } catch (error) {
      if (isBusy(error)) return undefined;
      throw error;
    }
  }

  override createDriver(): Driver {
    return new GroupCommitDriver(this.#database, this.#state, this.#startCheckpoints);
  }

  override createAdapter(): DialectAdapter {
    return new SharedConnectionSqliteAdapter();
  }
}

/** `readOnly` opens an existing file as it is (a backup to read from): nothing is written to it. */
export function createSqliteDialect(file: string, options: { readOnly?: boolean } = {}): NodeSqliteDialect {
  const readOnly = options.readOnly ?? false;
  if (file !== ':memory:' && !readOnly) mkdirSync(path.dirname(file), { recursive: true });
  const db = new DatabaseSync(file, {
    enableForeignKeyConstraints: true,
    timeout: SQLITE_BUSY_TIMEOUT_MS,
    readOnly,
  });
  const onDisk = file !== ':memory:' && !readOnly;
  if (onDisk) db.exec('pragma journal_mode = wal');
  db.exec('pragma synchronous = normal');
  // Sorts, window functions and the savepoint an explicit transaction is in a group otherwise
  // create, write and delete a file in /var/tmp each time they need scratch space.
  db.exec('pragma temp_store = memory');
  const dataVersion = db.prepare('pragma data_version');
  dataVersion.setReturnArrays(true);
  return new NodeSqliteDialect(
    wrapDatabase(db),
    db,
    dataVersion,
    onDisk ? () => startCheckpoints(db, file) : undefined,
  );
}
