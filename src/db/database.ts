import { Kysely, type LogEvent } from 'kysely';
import type { DatabaseConfig } from '../config.ts';
import { attachChangeFeed, PostgresChangeFeed, reportingWrites, SqliteChangeFeed } from './changes.ts';
import { createPostgresDialect } from './postgres.ts';
import type { Database, Db } from './schema.ts';
import { createSqliteDialect } from './sqlite.ts';

export type Dialect = DatabaseConfig['kind'];

export interface DatabaseHandle {
  db: Db;
  dialect: Dialect;
  /** Where the data lives, for the start-up banner (never includes credentials). */
  location: string;
  /** How another thread opens the same data; absent for an in-memory SQLite database. */
  source?: DatabaseSource;
  close(): Promise<void>;
}

export interface DatabaseSource {
  config: DatabaseConfig;
  searchPath?: string;
}

export interface OpenDatabaseOptions {
  searchPath?: string;
  onIdleClientError?: (error: Error) => void;
  /** Called with every statement the handle runs, transaction control included (tests count them). */
  onStatement?: (event: LogEvent) => void;
}

export function openDatabase(config: DatabaseConfig, options: OpenDatabaseOptions = {}): DatabaseHandle {
  if (config.kind === 'sqlite') {
    const sqlite = createSqliteDialect(config.file);
    const feed = new SqliteChangeFeed(() => sqlite.dataVersion());
    const dialect = reportingWrites(sqlite, () => feed.written());
    const db = new Kysely<Database>({ dialect, log: options.onStatement });
    attachChangeFeed(db, feed);
    return {
      db,
      dialect: 'sqlite',
      location: `sqlite ${config.file}`,
      ...(config.file === ':memory:' ? {} : { source: { config } }),
      close: () => db.destroy(),
    };
  }
  const feed = new PostgresChangeFeed(async () => {
    const pg = (await import('pg')).default;
    return new pg.Client({ connectionString: config.url });
  });
  const dialect = createPostgresDialect({
    url: config.url,
    searchPath: options.searchPath,
    onIdleClientError:
      options.onIdleClientError ?? ((error) => console.error('postgres idle client error', error)),
  });
  const db = new Kysely<Database>({
    dialect: reportingWrites(dialect, () => feed.written()),
    log: options.onStatement,
  });
  attachChangeFeed(db, feed);
  const url = new URL(config.url);
  return {
    db,
    dialect: 'postgres',
    location: `postgres ${url.host}${url.pathname}`,
    source: { config, searchPath: options.searchPath },
    close: async () => {
      await feed.close();
      await db.destroy();
    },
  };
}
