import { setImmediate } from 'node:timers';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  SqliteAdapter,
  type SqliteDatabase,
} from 'kysely';
import type { Checkpoints } from './checkpoint.ts';

/** The raw connection's transaction state, for the driver to see what SQLite did to it. */
export interface TransactionState {
  readonly isTransaction: boolean;
}

type StatementKind = 'read' | 'change' | 'other';
/** What a caller waits to do: run a statement, or begin a transaction. */
type Use = StatementKind | 'transaction';

const FIRST_WORD = /^\s*([a-z]+)/i;
const CHANGES = new Set(['insert', 'update', 'delete', 'replace']);
const CHANGE_ANYWHERE = /\b(insert|update|delete|replace)\b/i;

/**
 * What a statement does, from its words: reads (a `with` that changes nothing is one), row
 * changes, which may share a transaction with others, and the rest (DDL, pragmas, `vacuum into`),
 * which run outside any transaction. A name that looks like a change word makes a read count as a
 * change: that costs a transaction, never a lost write.
 */
function kindOf(sql: string): StatementKind {
  const word = FIRST_WORD.exec(sql)?.[1]?.toLowerCase() ?? '';
  if (word === 'select') return 'read';
  if (word === 'with') return CHANGE_ANYWHERE.test(sql) ? 'change' : 'read';
  return CHANGES.has(word) ? 'change' : 'other';
}

/** The writes of one event-loop turn, one transaction: each caller resumes once it has committed. */
class Group {
  readonly committed: Promise<void>;
  resolve!: () => void;
  reject!: (error: unknown) => void;
  /** Why the transaction ended without committing, once it has. */
  failure: { error: unknown } | undefined;
  /** The turn ended while an explicit transaction was half-way in it: commit as it ends. */
  commitDeferred = false;

  constructor() {
    this.committed = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // Every member awaits `committed` and answers its failure itself; a group whose members all
    // failed earlier must not report the rejection a second time as unhandled.
    this.committed.catch(() => undefined);
  }
}

/**
 * One holder per acquisition of the connection: the driver tells the caller whose transaction is
 * open from every other caller, which waits for it to end.
 */
class Holder implements DatabaseConnection {
  readonly #driver: GroupCommitDriver;

  constructor(driver: GroupCommitDriver) {
    this.#driver = driver;
  }

  executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return this.#driver.execute<R>(this, query);
  }

  async *streamQuery<R>(query: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const { rows } = await this.executeQuery<R>(query);
    for (const row of rows) yield { rows: [row] };
  }
}

/** How long a write waits for another connection's write lock before it fails as busy. */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;
const BUSY_PAUSE_MS = 2;

/** When this caller first found the write lock taken. */
interface BusyWait {
  since?: number;
}

/** SQLITE_BUSY, in the primary code of `node:sqlite`'s (possibly extended) `errcode`. */
export function isBusy(error: unknown): boolean {
  const code = (error as { errcode?: unknown }).errcode;
  return typeof code === 'number' && (code & 0xff) === 5;
}

/** The savepoint an explicit transaction is inside its group's transaction. */
const SAVEPOINT = 'explicit_transaction';

/**
 * The one SQLite connection, shared by every caller, with group commit. A commit is most of a
 * small write's cost: every page a transaction touched goes to the log whole, about four for a
 * one-row insert with its indexes, sixty for a new workspace. So the writes of one event-loop turn
 * share one transaction: the first opens it (`begin immediate`), the turn's end commits it, and
 * each caller gets its answer only after that commit. Nothing a caller acts on can be lost to a
 * crash that the caller survives, and each caller's writes still reach the file in the order it
 * made them.
 * - A row change outside a transaction joins the group as it is.
 * - An explicit transaction begins a group (an open one commits first) inside a savepoint, with the
 *   connection to itself until it ends: every other caller waits, then joins. Its rollback undoes
 *   only its own writes; its commit returns once the group has committed, which is at once if the
 *   turn ended while it ran.
 * - A read made while a group is open sees uncommitted rows, so it waits for the commit too; a
 *   read made with none open runs at once.
 * - Any other statement (DDL, pragmas, `vacuum into`) commits an open group first and runs alone.
 * - A statement error that ends the whole transaction (SQLite undoes only the statement on a
 *   constraint error, the transaction on a full disk) fails every member of the group.
 */
export class GroupCommitDriver implements Driver {
  readonly #database: SqliteDatabase;
  readonly #state: TransactionState;
  readonly #startCheckpoints: (() => Checkpoints) | undefined;
  #checkpoints: Checkpoints | undefined;
  #group: Group | undefined;
  /** While another connection holds the write lock: the pause before the next try, and its error. */
  #busyPause: Promise<void> | undefined;
  #busyError: unknown;
  /** The caller whose explicit transaction is open, and the group it is a savepoint of. */
  #owner: { holder: Holder; group: Group; done: Promise<void>; end: () => void } | undefined;
  readonly #idle: Holder[] = [];

  constructor(database: SqliteDatabase, state: TransactionState, startCheckpoints?: () => Checkpoints) {
    this.#database = database;
    this.#state = state;
    this.#startCheckpoints = startCheckpoints;
  }

  /**
   * Kysely starts a driver with its first statement: a handle never used starts no worker. From
   * here on SQLite never waits for another connection's lock on its own; see `#statement`.
   */
  async init(): Promise<void> {
    this.#checkpoints = this.#startCheckpoints?.();
    this.#run('pragma busy_timeout = 0');
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.#idle.pop() ?? new Holder(this);
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    const holder = connection as Holder;
    if (this.#owner?.holder === holder) this.#rollbackOwner();
    this.#idle.push(holder);
  }

  async beginTransaction(connection: DatabaseConnection): Promise<void> {
    const holder = connection as Holder;
    const busy: BusyWait = {};
    for (
      let wait = this.#waitBeforeUse(holder, 'transaction', busy);
      wait;
      wait = this.#waitBeforeUse(holder, 'transaction', busy)
    ) {
      await wait;
    }
    const group = this.#openedGroup();
    this.#run(`savepoint ${SAVEPOINT}`);
    let end = () => {};
    const done = new Promise<void>((resolve) => {
      end = resolve;
    });
    this.#owner = { holder, group, done, end };
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const owner = this.#owner;
    // Rolled back under it (the handle was closed): its writes are gone.
    if (owner?.holder !== connection) throw new Error('the transaction was rolled back before its commit');
    if (owner.group.failure) {
      this.#endOwnership();
      throw owner.group.failure.error;
    }
    try {
      this.#run(`release ${SAVEPOINT}`);
    } catch (error) {
      this.#rollbackOwner();
      throw error;
    }
    this.#endOwnership();
    await owner.group.committed;
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    if (this.#owner?.holder === connection) this.#rollbackOwner();
  }

  /** The checkpoint worker's connection closes first, so this one's close removes the log. */
  async destroy(): Promise<void> {
    if (this.#owner) this.#rollbackOwner();
    if (this.#group) this.#commit(this.#group);
    await this.#checkpoints?.stop();
    this.#database.close();
  }

  async execute<R>(holder: Holder, query: CompiledQuery): Promise<QueryResult<R>> {
    const owner = this.#owner;
    if (owner?.holder === holder) {
      if (owner.group.failure) throw owner.group.failure.error;
      return this.#inGroup(owner.group, query);
    }
    const kind = kindOf(query.sql);
    const busy: BusyWait = {};
    for (
      let wait = this.#waitBeforeUse(holder, kind, busy);
      wait;
      wait = this.#waitBeforeUse(holder, kind, busy)
    ) {
      await wait;
    }
    // From here to the statement nothing awaits: no other caller can begin or commit in between.
    // `#waitBeforeUse` has committed any group before an `other` statement.
    if (kind === 'other' || (kind === 'read' && !this.#group)) return this.#statement<R>(query);
    const group = this.#openedGroup();
    let result: QueryResult<R>;
    try {
      result = this.#inGroup(group, query);
    } catch (error) {
      // A group that failed answers with its own failure: the rows this error may stem from are gone.
      await group.committed;
      throw error;
    }
    await group.committed;
    return result;
  }

  /**
   * What `holder` must wait for before `use`, or undefined once it may go ahead now, with the group
   * a change or a transaction needs open: another caller's transaction to end; before a
   * transaction opens, the checkpoint the log's bound may ask for; while another connection holds
   * the write lock, a short pause. SQLite's own busy wait would hold the event loop, and with it
   * this connection's commits, which a second handle of this process may be the one waiting for.
   * A transaction begins in a group of its own, so that it never waits for a write begun before
   * it, and the group's commit, deferred while it runs, never waits for it.
   */
  #waitBeforeUse(holder: Holder, use: Use, busy: BusyWait): Promise<void> | undefined {
    if (this.#owner && this.#owner.holder !== holder) return this.#owner.done;
    if (use === 'read' || (use === 'change' && this.#group)) return undefined;
    if (this.#group && use !== 'change') this.#commit(this.#group);
    const checkpoint = this.#checkpoints?.beforeUse();
    if (checkpoint || use === 'other') return checkpoint;
    return this.#tryOpenGroup(busy);
  }

  #tryOpenGroup(busy: BusyWait): Promise<void> | undefined {
    if (this.#busyPause) return this.#pauseOrGiveUp(busy);
    try {
      this.#run('begin immediate');
    } catch (error) {
      if (!isBusy(error)) throw error;
      this.#busyError = error;
      this.#busyPause = sleep(BUSY_PAUSE_MS).then(() => {
        this.#busyPause = undefined;
      });
      return this.#pauseOrGiveUp(busy);
    }
    const group = new Group();
    this.#group = group;
    this.#commitAtTurnEnd(group);
    return undefined;
  }

  /**
   * The pause every caller waiting for the write lock shares (one of them tries again after it),
   * or, once this caller has waited the busy timeout, the busy error.
   */
  #pauseOrGiveUp(busy: BusyWait): Promise<void> {
    const now = Date.now();
    busy.since ??= now;
    if (now - busy.since >= SQLITE_BUSY_TIMEOUT_MS) throw this.#busyError;
    return this.#busyPause ?? Promise.resolve();
  }

  /** The open group, which `#waitBeforeUse` has opened for a change or a transaction. */
  #openedGroup(): Group {
    if (!this.#group) throw new Error('no group is open for a change');
    return this.#group;
  }

  /** Commits `group` once this turn's callers have joined it, never with a transaction half-way in it. */
  #commitAtTurnEnd(group: Group): void {
    setImmediate(() => {
      if (this.#group !== group) return;
      if (this.#owner?.group === group) group.commitDeferred = true;
      else this.#commit(group);
    });
  }

  #inGroup<R>(group: Group, query: CompiledQuery): QueryResult<R> {
    try {
      return this.#statement<R>(query);
    } catch (error) {
      if (!this.#state.isTransaction) this.#fail(group, error);
      throw error;
    }
  }

  #commit(group: Group): void {
    this.#group = undefined;
    try {
      this.#run('commit');
    } catch (error) {
      this.#fail(group, error);
      return;
    }
    group.resolve();
  }

  /** The group's transaction is gone or must go: every member fails with `error`. */
  #fail(group: Group, error: unknown): void {
    if (this.#group === group) this.#group = undefined;
    group.failure = { error };
    try {
      if (this.#state.isTransaction) this.#run('rollback');
    } finally {
      group.reject(error);
    }
  }

  /** Undoes the open explicit transaction's writes, and only those; the group goes on. */
  #rollbackOwner(): void {
    const owner = this.#owner;
    if (!owner) return;
    try {
      if (!owner.group.failure) {
        this.#run(`rollback to ${SAVEPOINT}`);
        this.#run(`release ${SAVEPOINT}`);
      }
    } catch (error) {
      this.#fail(owner.group, error);
      throw error;
    } finally {
      this.#endOwnership();
    }
  }

  #endOwnership(): void {
    const owner = this.#owner;
    if (!owner) return;
    this.#owner = undefined;
    // Its turn has ended already: commit now, before anyone waiting for it can join and defer again.
    if (owner.group.commitDeferred && this.#group === owner.group) this.#commit(owner.group);
    owner.end();
  }

  #run(sql: string): void {
    this.#database.prepare(sql).run([]);
  }

  /**
   * Runs `query`; one that met another connection's lock outside a transaction runs again with
   * SQLite's own busy wait. That is rare: in WAL mode a read meets one only while another process
   * recovers or removes the log, and DDL and `vacuum into` run seldom. Writes never meet one, the
   * group's transaction holds the write lock, and `begin immediate` itself never waits
   * (`#tryOpenGroup`). Inside a transaction a busy statement is not run again: SQLite may have
   * rolled the transaction back, and the retry would commit on its own.
   */
  #statement<R>(query: CompiledQuery): QueryResult<R> {
    const inTransaction = this.#state.isTransaction;
    try {
      return this.#statementOnce<R>(query);
    } catch (error) {
      if (inTransaction || !isBusy(error)) throw error;
    }
    this.#run(`pragma busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    try {
      return this.#statementOnce<R>(query);
    } finally {
      this.#run('pragma busy_timeout = 0');
    }
  }

  #statementOnce<R>(query: CompiledQuery): QueryResult<R> {
    const statement = this.#database.prepare(query.sql);
    if (statement.reader) return { rows: statement.all(query.parameters) as R[] };
    const { changes, lastInsertRowid } = statement.run(query.parameters);
    return {
      insertId: lastInsertRowid == null ? undefined : BigInt(lastInsertRowid),
      numAffectedRows: changes == null ? undefined : BigInt(changes),
      rows: [],
    };
  }
}

/** SQLite's adapter, told that callers may hold the connection at once: the driver arbitrates. */
export class SharedConnectionSqliteAdapter extends SqliteAdapter {
  override get supportsMultipleConnections(): boolean {
    return true;
  }
}
