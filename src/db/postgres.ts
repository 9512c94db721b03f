import { PostgresDialect } from 'kysely';
import type pg from 'pg';

const INT8_OID = 20;

/**
 * Timestamps are stored as epoch milliseconds in bigint columns; they are far below 2^53, so the
 * pool parses int8 as a JS number instead of pg's default string.
 */
function typesOf(driver: typeof pg) {
  return {
    getTypeParser(oid: number, format?: 'text' | 'binary') {
      if (oid === INT8_OID) return (value: string) => Number(value);
      return driver.types.getTypeParser(oid, format);
    },
  };
}

export interface PostgresOptions {
  url: string;
  /** Tests isolate themselves in a schema of their own. */
  searchPath?: string;
  maxConnections?: number;
  /**
   * A pooled connection that fails (a database restart) must be reported, not crash the process:
   * while idle, and while checked out between two queries (a transaction awaiting other work).
   */
  onIdleClientError: (error: Error) => void;
}

/** The driver is loaded when the first connection is needed, so a SQLite start never loads it. */
export function createPostgresDialect(options: PostgresOptions): PostgresDialect {
  return new PostgresDialect({
    pool: async () => {
      const driver = (await import('pg')).default;
      const pool = new driver.Pool({
        connectionString: options.url,
        max: options.maxConnections ?? 10,
        types: typesOf(driver),
        ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
      });
      pool.on('error', options.onIdleClientError);
      // A checked-out client emits its connection's error itself, with no listener of the pool's:
      // the query that uses it next fails, and the pool discards it when it is released.
      pool.on('acquire', (client) => client.on('error', options.onIdleClientError));
      pool.on('release', (_error, client) => client.off('error', options.onIdleClientError));
      return pool;
    },
  });
}
