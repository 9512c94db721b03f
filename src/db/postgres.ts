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

/** Statements a connection prepares, at most; later ones are sent unnamed, as before. */
const PREPARED_PER_CONNECTION = 500;

/**
 * Errors after which a prepared statement cannot be used again on its connection: its result type
 * changed under it ("cached plan must not change result type", when a migration of another
 * instance changes a column's type), or it is gone (`prepared statement "svc_3" does not exist`).
 */
const UNUSABLE_STATEMENT = new Set(['0A000', '26000']);

/**
 * A connection that prepares each statement once and from then on only binds it: PostgreSQL then
 * skips parsing and planning it again (an authenticated `GET /api/v1/me` went from 6,200 to 11,000
 * requests a second). Only statements with parameters (not transaction control) and no `*`: a
 * statement naming its columns keeps its result type when a migration adds a column, while a
 * prepared `select *` would fail with "cached plan must not change result type" on every instance
 * still holding it. PostgreSQL re-plans a prepared statement itself when a table it reads changes.
 * A statement that fails in a way that leaves it unusable (above, or a value the driver could not
 * send, which closes the statement on the server) fails that one query; the next prepares it anew
 * under another name.
 */
function preparingClient(driver: typeof pg): typeof pg.Client {
  return class PreparingClient extends driver.Client {
    readonly #names = new Map<string, string>();
    #prepared = 0;

    override query(...args: unknown[]): never {
      const [text, values, callback] = args;
      const query = super.query as (...args: unknown[]) => never;
      if (
        typeof text === 'string' &&
        Array.isArray(values) &&
        values.length > 0 &&
        callback === undefined &&
        !text.includes('*')
      ) {
        let name = this.#names.get(text);
        if (name === undefined && this.#prepared < PREPARED_PER_CONNECTION) {
          name = `svc_${this.#prepared++}`;
          this.#names.set(text, name);
        }
        if (name !== undefined) {
          const result = query.call(this, { name, text, values }) as Promise<unknown>;
          return result.catch((error: unknown) => {
            const unusable =
              !(error instanceof driver.DatabaseError) || UNUSABLE_STATEMENT.has(error.code ?? '');
            if (unusable && this.#names.get(text) === name) this.#names.delete(text);
            throw error;
          }) as never;
        }
      }
      return query.apply(this, args);
    }
  };
}

/** The driver is loaded when the first connection is needed, so a SQLite start never loads it. */
export function createPostgresDialect(options: PostgresOptions): PostgresDialect {
  return new PostgresDialect({
    pool: async () => {
      const driver = (await import('pg')).default;
      const pool = new driver.Pool({
        Client: preparingClient(driver),
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
