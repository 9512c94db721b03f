import type { Compilable, CompiledQuery, Insertable, QueryResult } from 'kysely';
import type { Database, Db } from './schema.ts';

type Value = string | number | bigint | boolean | null;

/** Stands in for a named value while a prepared query is compiled; no real value starts with it. */
const STAND_IN = '\u0000prepared:';

type Slot = { name: string } | { value: unknown };
type Prepared<Row> = { query: CompiledQuery<Row>; slots: Slot[] };

/** Names a value of a prepared query: `param: Param<{ id: string }>` in its `build`. */
export type Param<Params> = <K extends keyof Params & string>(name: K) => never;

/*
 * Building and compiling a query through the query builder costs more than running a small indexed
 * one on SQLite (an insert of twenty columns: about 30 us to build, less to run). A hot query is
 * therefore compiled once per Kysely adapter, which a database handle shares with its transactions
 * (so a query prepared on the handle serves inside a transaction too), with stand-ins where its
 * values go; each run puts its values in their places.
 */

/**
 * A hot query with named values: `build` writes it once, with `param('name')` wherever a value
 * changes from run to run; every other value in it stays as written. A name may appear any number
 * of times.
 */
export function preparedQuery<Params extends Record<string, Value>, Row>(
  build: (db: Db, param: Param<Params>) => Compilable<Row>,
): (db: Db, params: Params) => Promise<QueryResult<Row>> {
  const compiled = new WeakMap<object, Prepared<Row>>();
  return async (db, params) => {
    const adapter = db.getExecutor().adapter;
    let prepared = compiled.get(adapter);
    if (!prepared) {
      const named = new Set<string>();
      prepared = compile(
        () =>
          build(db, (name) => {
            named.add(name);
            return standIn(name);
          }),
        named,
      );
      compiled.set(adapter, prepared);
    }
    return run(db, prepared, params);
  };
}

/**
 * A hot query of one row, written with the row's values: each column the row gives (a value
 * left undefined is no column, as in the query builder) stands for the row's value in its column.
 * Compiled once per set of columns.
 */
export function preparedRowQuery<Row extends object, Out>(
  build: (db: Db, row: Row) => Compilable<Out>,
): (db: Db, row: Row) => Promise<QueryResult<Out>> {
  const compiled = new WeakMap<object, Map<string, Prepared<Out>>>();
  return async (db, row) => {
    const adapter = db.getExecutor().adapter;
    let byColumns = compiled.get(adapter);
    if (!byColumns) {
      byColumns = new Map();
      compiled.set(adapter, byColumns);
    }
    const values = row as Record<string, unknown>;
    const columns = Object.keys(values).filter((column) => values[column] !== undefined);
    const key = columns.join(',');
    let prepared = byColumns.get(key);
    if (!prepared) {
      const standIns = Object.fromEntries(columns.map((column) => [column, standIn(column)]));
      prepared = compile(() => build(db, standIns as Row), columns);
      byColumns.set(key, prepared);
    }
    return run(db, prepared, values);
  };
}

const insertsByTable = new Map<string, (db: Db, row: object) => Promise<QueryResult<unknown>>>();

/** Inserts one row into `table`, compiled once per table and set of columns. */
export async function insertRow<T extends keyof Database & string>(
  db: Db,
  table: T,
  row: Insertable<Database[T]>,
): Promise<void> {
  let insert = insertsByTable.get(table);
  if (insert === undefined) {
    insert = preparedRowQuery((db, values: object) => db.insertInto(table).values(values as never));
    insertsByTable.set(table, insert);
  }
  await insert(db, row);
}

function standIn(name: string): never {
  return `${STAND_IN}${name}` as never;
}

/** Compiles the query, and checks that each of `names` became a parameter of it. */
function compile<Row>(build: () => Compilable<Row>, names: Iterable<string>): Prepared<Row> {
  const query = build().compile();
  if (query.sql.includes(STAND_IN)) {
    throw new Error(`a prepared query's value was written into its SQL, not passed: ${query.sql}`);
  }
  const slots = query.parameters.map((value): Slot => {
    if (typeof value === 'string' && value.startsWith(STAND_IN))
      return { name: value.slice(STAND_IN.length) };
    return { value };
  });
  for (const name of names) {
    if (!slots.some((slot) => 'name' in slot && slot.name === name)) {
      throw new Error(`a prepared query's value ${name} became no parameter of it: ${query.sql}`);
    }
  }
  return { query, slots };
}

function run<Row>(db: Db, { query, slots }: Prepared<Row>, values: Record<string, unknown>) {
  const parameters = slots.map((slot) => ('name' in slot ? plainValue(values, slot.name) : slot.value));
  return db.executeQuery<Row>({ ...query, parameters });
}

/**
 * A value is passed as it is, so an expression (`sql` or a reference), which the query builder
 * would have written into the SQL, cannot stand where a stand-in was compiled.
 */
function plainValue(values: Record<string, unknown>, name: string): unknown {
  const value = values[name];
  if (
    typeof value === 'object' &&
    value !== null &&
    !(value instanceof Date) &&
    !(value instanceof Uint8Array)
  ) {
    throw new Error(`a prepared query's value ${name} is an object, not a value it can pass`);
  }
  return value;
}
