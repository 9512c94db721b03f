import type { Compilable, CompiledQuery } from 'kysely';
import type { Db } from './schema.ts';

/**
 * A hot query compiled once per database handle and then run with new values: building and
 * compiling it through the query builder costs more than running a small indexed query on SQLite.
 * `build` writes the query with stand-in values; the values passed on each run replace them in the
 * order they appear in the SQL, and must be as many.
 */
export function preparedQuery<Row>(
  build: (db: Db) => Compilable<Row>,
): (db: Db, ...values: readonly (string | number | null)[]) => Promise<Row[]> {
  const compiled = new WeakMap<Db, CompiledQuery<Row>>();
  return async (db, ...values) => {
    let query = compiled.get(db);
    if (!query) {
      query = build(db).compile();
      compiled.set(db, query);
    }
    if (query.parameters.length !== values.length) {
      throw new Error(
        `prepared query takes ${query.parameters.length} values, got ${values.length}: ${query.sql}`,
      );
    }
    return (await db.executeQuery<Row>({ ...query, parameters: values })).rows;
  };
}
