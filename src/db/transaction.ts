import { PostgresAdapter } from 'kysely';
import type { Db, Tx } from './schema.ts';

/** What runs once the transaction opened by `inTransaction` has committed. */
const committed = new WeakMap<Db, (() => void)[]>();

/**
 * Runs `work` in one database transaction: everything it writes, including outbox rows
 * (emails, jobs), commits together or not at all. Inside a transaction already, it joins it.
 */
export async function inTransaction<T>(db: Db, work: (trx: Tx) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db as Tx);
  const callbacks: (() => void)[] = [];
  const result = await db.transaction().execute((trx) => {
    committed.set(trx, callbacks);
    return work(trx);
  });
  for (const callback of callbacks) callback();
  return result;
}

/**
 * Calls `callback` once what `db` wrote is committed: after the commit of a transaction opened by
 * `inTransaction` (never, if it rolls back), or at once outside one. In a transaction opened some
 * other way it is called at once, before the commit: use it only for hints whose loss costs a
 * delay, never correctness (waking the job runner early). It must not throw: the transaction it
 * follows has committed, and `inTransaction` would report the throw as its failure.
 */
export function afterCommit(db: Db, callback: () => void): void {
  const callbacks = committed.get(db);
  if (callbacks) callbacks.push(callback);
  else callback();
}

/**
 * `query` locking the rows it reads until the transaction ends, for a read-modify-write: on
 * PostgreSQL `FOR NO KEY UPDATE`, so a concurrent change of the same row waits and then reads what
 * this one wrote, instead of both writing back what they read (a lost update), while inserts that
 * only reference the row (foreign keys take `KEY SHARE`) go on; a SQLite transaction takes the
 * write lock when it begins (`begin immediate`), so its writers take turns already. Lock a
 * workspace's row before the rows of its records, the order plan changes use.
 */
export function lockingRead<Q extends { forNoKeyUpdate(): Q }>(trx: Tx, query: Q): Q {
  return trx.getExecutor().adapter instanceof PostgresAdapter ? query.forNoKeyUpdate() : query;
}

/**
 * True when a statement failed on a unique constraint: PostgreSQL's `23505`, SQLite's
 * `SQLITE_CONSTRAINT_UNIQUE` (2067). Lets a domain function turn a lost race for a unique value
 * into its conflict answer instead of a 500.
 */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  return code === '23505' || errcode === 2067;
}
