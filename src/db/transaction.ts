import type { Db, Tx } from './schema.ts';

/**
 * Runs `work` in one database transaction: everything it writes, including outbox rows
 * (emails, jobs), commits together or not at all. Inside a transaction already, it joins it.
 */
export async function inTransaction<T>(db: Db, work: (trx: Tx) => Promise<T>): Promise<T> {
  if (db.isTransaction) return work(db as Tx);
  return db.transaction().execute(work);
}
