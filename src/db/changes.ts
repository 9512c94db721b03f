import type { AbortableOperationOptions, CompiledQuery, DatabaseConnection, Dialect, Driver } from 'kysely';
import type { Db } from './schema.ts';

/**
 * How long another process's commit to a SQLite file (the CLI) can go unseen: the file's
 * `data_version` is asked at most this often (asking costs about as much as a small query).
 */
export const SQLITE_OUTSIDE_WRITES_MS = 100;

/**
 * How long a read kept on a PostgreSQL instance may be served without reading it again, even
 * when no notification came: the bound when a notification is lost.
 */
export const POSTGRES_KEPT_READ_MS = 1_000;

/** The channel the triggers of migration 0033 notify on PostgreSQL. */
export const READS_CHANNEL = 'svc_reads';

/**
 * A number that changes whenever data a kept read depends on may have changed, so that a read
 * kept under one value may be served while the number still has it; `undefined` while nothing may
 * be served from memory (PostgreSQL's notifications are not being received).
 */
export interface ChangeFeed {
  version(): number | undefined;
  /** Resolves once every change committed before the call moves the next `version()`. */
  seen(): Promise<void>;
  close(): Promise<void>;
}

const feeds = new WeakMap<Db, ChangeFeed>();

/**
 * The version of the data this database handle's kept reads depend on; read it BEFORE reading
 * what is kept under it, so that what is read afterwards is at least as new as the version.
 * `undefined` means: do not serve from memory now (no feed, or its notifications are down).
 */
export function readsVersion(db: Db): number | undefined {
  return feeds.get(db)?.version();
}

/**
 * Resolves once every change committed before the call (by any instance or process) is seen by
 * the next `readsVersion(db)`, without waiting out a bound: a write's notification is in before
 * this one's own (PostgreSQL delivers them in commit order).
 */
export async function changesSeen(db: Db): Promise<void> {
  await feeds.get(db)?.seen();
}

export function attachChangeFeed(db: Db, feed: ChangeFeed): void {
  feeds.set(db, feed);
}

const FIRST_WORD = /^\s*([a-z]+)/i;
const DATA_CHANGES = new Set(['insert', 'update', 'delete', 'with', 'replace', 'merge']);
const TRANSACTION_ENDS = new Set(['commit', 'rollback', 'end', 'release']);

/**
 * The dialect with every change reported to `onWrite` once the statement that made it has
 * completed, and again when its transaction ends (a commit, or a rollback that undoes it), before
 * the connection goes back to the pool: a read that looks at the version afterwards reads data at
 * least as new as that change. Reads, transaction starts and statements that changed no row
 * report nothing (the job runner's polls change nothing); any other statement (DDL) reports. The
 * SQLite driver ends its transactions itself (`sqlite-driver.ts`), so there a change is reported
 * once, when its statement completes; callers that read meanwhile wait for the transaction.
 */
export function reportingWrites(dialect: Dialect, onWrite: () => void): Dialect {
  const patched = new WeakSet<DatabaseConnection>();
  const report = (connection: DatabaseConnection): DatabaseConnection => {
    if (patched.has(connection)) return connection;
    patched.add(connection);
    const execute = connection.executeQuery.bind(connection);
    let changedInTransaction = false;
    connection.executeQuery = async <R>(query: CompiledQuery, options?: AbortableOperationOptions) => {
      const word = FIRST_WORD.exec(query.sql)?.[1]?.toLowerCase() ?? '';
      if (word === 'select' || word === 'begin' || word === 'savepoint') return execute<R>(query, options);
      if (TRANSACTION_ENDS.has(word)) {
        try {
          return await execute<R>(query, options);
        } finally {
          if (changedInTransaction) onWrite();
          if (word === 'commit' || word === 'end' || /^\s*rollback\s*;?\s*$/i.test(query.sql)) {
            changedInTransaction = false;
          }
        }
      }
      if (!DATA_CHANGES.has(word)) {
        try {
          return await execute<R>(query, options);
        } finally {
          changedInTransaction = true;
          onWrite();
        }
      }
      const result = await execute<R>(query, options);
      if ((result.numAffectedRows ?? 0n) > 0n || result.rows.length > 0) {
        changedInTransaction = true;
        onWrite();
      }
      return result;
    };
    return connection;
  };
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: (): Driver => {
      // The driver itself, its one method replaced: a proxy bound a new function on every call.
      const driver = dialect.createDriver();
      const acquire = driver.acquireConnection.bind(driver);
      driver.acquireConnection = async () => report(await acquire());
      return driver;
    },
  };
}

/**
 * SQLite: one process owns the file, so every write it makes bumps the version at once; commits of
 * other processes (the CLI) are found through `data_version`, asked at most every
 * SQLITE_OUTSIDE_WRITES_MS.
 */
export class SqliteChangeFeed implements ChangeFeed {
  #version = 0;
  #outside: number;
  #askedAt: number;
  readonly #dataVersion: () => number | undefined;
  readonly #now: () => number;

  /** `dataVersion` answers undefined when it cannot be read now; nothing is served until it is. */
  constructor(dataVersion: () => number | undefined, now: () => number = performance.now.bind(performance)) {
    this.#dataVersion = dataVersion;
    this.#now = now;
    // Unread, it differs from the first value read, which then moves the version: always safe.
    this.#outside = dataVersion() ?? Number.NaN;
    this.#askedAt = now();
  }

  written(): void {
    this.#version++;
  }

  version(): number | undefined {
    const now = this.#now();
    if (now - this.#askedAt >= SQLITE_OUTSIDE_WRITES_MS) {
      const outside = this.#dataVersion();
      if (outside === undefined) return undefined;
      this.#askedAt = now;
      if (outside !== this.#outside) {
        this.#outside = outside;
        this.#version++;
      }
    }
    return this.#version;
  }

  async seen(): Promise<void> {
    this.#askedAt = Number.NEGATIVE_INFINITY;
  }

  async close(): Promise<void> {}
}

/** The part of a `pg` client the feed uses. */
export interface NotificationClient {
  connect(): Promise<unknown>;
  query(text: string): Promise<unknown>;
  end(): Promise<void>;
  on(event: 'notification', listener: (message: { payload?: string }) => void): unknown;
  on(event: 'error' | 'end', listener: (error?: Error) => void): unknown;
}

/**
 * PostgreSQL: several instances share the data. This instance's own writes bump the version at
 * once; another instance's changes to what kept reads depend on arrive as notifications (the
 * triggers of migration 0033) and bump it when they arrive. Nothing is served from memory until
 * this feed listens, nor after its connection fails (it listens again after RECONNECT_MS, and
 * everything kept before is then stale). A lost notification is bounded by the version moving on
 * its own every POSTGRES_KEPT_READ_MS.
 */
export class PostgresChangeFeed implements ChangeFeed {
  static readonly RECONNECT_MS = 1_000;
  #version = 0;
  #listening = false;
  #starting = false;
  #closed = false;
  #client: NotificationClient | undefined;
  #timer: NodeJS.Timeout | undefined;
  #epoch: number;
  #fences = 0;
  readonly #waiting = new Map<string, () => void>();
  readonly #connect: () => Promise<NotificationClient>;
  readonly #now: () => number;

  constructor(
    connect: () => Promise<NotificationClient>,
    now: () => number = performance.now.bind(performance),
  ) {
    this.#connect = connect;
    this.#now = now;
    this.#epoch = now();
  }

  written(): void {
    this.#version++;
  }

  version(): number | undefined {
    if (!this.#listening) {
      this.#listen();
      return undefined;
    }
    const now = this.#now();
    if (now - this.#epoch >= POSTGRES_KEPT_READ_MS) {
      this.#epoch = now;
      this.#version++;
    }
    return this.#version;
  }

  /** Starts listening, once at a time; the first read that wants the version starts it. */
  #listen(): void {
    if (this.#starting || this.#closed || this.#timer) return;
    this.#starting = true;
    void this.#connectAndListen();
  }

  async #connectAndListen(): Promise<void> {
    let client: NotificationClient | undefined;
    const failed = () => {
      if (client === undefined || this.#client !== client) return;
      this.#listening = false;
      this.#starting = false;
      this.#client = undefined;
      this.#releaseWaiting();
      client.end().catch(() => {});
      if (this.#closed) return;
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
      }, PostgresChangeFeed.RECONNECT_MS);
      this.#timer.unref();
    };
    try {
      client = await this.#connect();
      this.#client = client;
      client.on('error', failed);
      client.on('end', failed);
      client.on('notification', ({ payload }) => {
        this.#version++;
        const waiting = payload === undefined ? undefined : this.#waiting.get(payload);
        if (waiting) {
          this.#waiting.delete(payload as string);
          waiting();
        }
      });
      await client.connect();
      await client.query(`listen ${READS_CHANNEL}`);
    } catch {
      if (client === undefined) this.#starting = false;
      else failed();
      return;
    }
    if (this.#closed || this.#client !== client) {
      await client.end().catch(() => {});
      return;
    }
    this.#version++;
    this.#epoch = this.#now();
    this.#listening = true;
    this.#starting = false;
  }

  /**
   * Notifies a fence of its own and waits for it to come back: notifications arrive in commit
   * order, so every change committed before has moved the version by then. While this feed does
   * not listen nothing is served from memory, and once it listens again all kept reads are stale.
   */
  async seen(): Promise<void> {
    const client = this.#client;
    if (!this.#listening || client === undefined) return;
    const fence = `fence ${++this.#fences}`;
    const back = new Promise<void>((resolve) => this.#waiting.set(fence, resolve));
    await client.query(`notify ${READS_CHANNEL}, '${fence}'`);
    await back;
  }

  /** A failed connection brings no fence back; its waiters resolve (nothing is served then). */
  #releaseWaiting(): void {
    for (const resolve of this.#waiting.values()) resolve();
    this.#waiting.clear();
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#listening = false;
    this.#releaseWaiting();
    clearTimeout(this.#timer);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }
}
