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
  /** A pooled connection that fails while idle (a database restart) must be reported, not crash the process. */
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
      return pool;
    },
  });
}
