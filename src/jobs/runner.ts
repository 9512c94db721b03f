import { randomUUID } from 'node:crypto';
import { type Insertable, sql } from 'kysely';
import type { Dialect } from '../db/database.ts';
import { type Param, preparedQuery, preparedRowQuery } from '../db/prepared.ts';
import type { Db } from '../db/schema.ts';
import { afterCommit } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import type { JobsTable } from './jobs.table.ts';

export interface JobContext {
  jobId: string;
  /** 1 on the first run. */
  attempt: number;
  /**
   * Extends this run's lease by the runner's lease time, for a job that may run longer than one
   * lease (a package of several GiB): call it as work progresses, so no runner claims it again.
   */
  renewLease?(): Promise<void>;
}

export interface JobDefinition {
  run(payload: unknown, context: JobContext): Promise<void>;
  /**
   * Called when the job gives up, to record the failure where its owner looks. Must be idempotent:
   * if it fails, the job is not parked and gives up again when its lease ends.
   */
  onParked?(payload: unknown, lastError: string): Promise<void>;
}

/** Periodic work every instance runs; it must be an idempotent sweep (conditional updates). */
export interface Sweep {
  name: string;
  intervalMs: number;
  run(): Promise<void>;
}

export interface JobLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface JobRunnerOptions {
  db: Db;
  dialect: Dialect;
  clock: Clock;
  logger: JobLogger;
  definitions: Record<string, JobDefinition>;
  sweeps?: Sweep[];
  pollIntervalMs?: number;
  /** Jobs running at once in this runner. */
  concurrency?: number;
  /** Jobs of one concurrency key running at once (per runner; see `claimDue`). */
  perKeyConcurrency?: number;
  /** How long a claim lasts; a job whose worker died is claimed again after it. */
  leaseMs?: number;
  backoff?: (attempt: number) => number;
  /** Where the runner gets its timers; tests pass a fake to drive ticks without waiting. */
  timers?: Timers;
}

/** The two timer functions the runner uses, so a test can count and fire its timers. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface EnqueueOptions {
  kind: string;
  payload: unknown;
  runAt?: Date;
  maxAttempts?: number;
  dedupeKey?: string;
  /** Jobs of one key share `perKeyConcurrency` and the key's backoff (`noteKeyOutcome`). */
  concurrencyKey?: string;
}

/**
 * The runners started on each database handle, keyed by its adapter (which its transactions
 * share), so that a job queued in a transaction wakes the runners of its own database only.
 */
const runnersOf = new WeakMap<object, Set<() => void>>();

function adapterOf(db: Db): object {
  return db.getExecutor().adapter;
}

const insertJob = preparedRowQuery((db, row: Insertable<JobsTable>) =>
  db
    .insertInto('jobs')
    .values(row)
    .onConflict((oc) =>
      oc.column('dedupe_key').doUpdateSet({ dedupe_key: (eb) => eb.ref('excluded.dedupe_key') }),
    )
    .returning('id'),
);

/**
 * Adds a job in the caller's transaction, so it exists exactly when the change that needs it
 * commits, and wakes this process's runners once it has: a job due now starts without waiting
 * for the next poll. Returns the id of the job that exists: with a dedupe key already taken, the
 * existing job's (the no-op update on conflict is what makes the database return that row).
 */
export async function enqueueJob(db: Db, at: Date, options: EnqueueOptions): Promise<string> {
  const id = newId('job', at);
  const now = at.getTime();
  const runAt = options.runAt?.getTime() ?? now;
  const { rows } = await insertJob(db, {
    id,
    kind: options.kind,
    payload: JSON.stringify(options.payload),
    status: 'queued',
    max_attempts: options.maxAttempts ?? 10,
    run_at: runAt,
    locked_until: null,
    locked_by: null,
    last_error: null,
    dedupe_key: options.dedupeKey ?? null,
    concurrency_key: options.concurrencyKey ?? null,
    created_at: now,
    updated_at: now,
  });
  const row = rows[0];
  if (!row) throw new Error('a queued job was not returned');
  const wakes = runnersOf.get(adapterOf(db));
  if (wakes && runAt <= now) {
    afterCommit(db, () => {
      for (const wake of wakes) wake();
    });
  }
  return row.id;
}

/** Exponential backoff from 5 s, capped at one hour, with ±20% jitter so retries do not stampede. */
export function defaultBackoff(attempt: number): number {
  const base = Math.min(5_000 * 2 ** (attempt - 1), 3_600_000);
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/**
 * How long a wake waits for more jobs to be queued, so that under load one claim takes several
 * (a claim per job cost more than the jobs' wait) and an idle runner still starts a job at once.
 */
const WAKE_DELAY_MS = 50;
const WAKE_SLOT = -1;

/** Rankings one claim makes at most: the first, and again after other runners took what it ranked. */
const CLAIM_ROUNDS = 3;

type ClaimedJob = Pick<JobsTable, 'id' | 'kind' | 'payload' | 'max_attempts'> & { attempts: number };

/**
 * A database-backed job runner. Jobs are claimed with a lease (`FOR UPDATE SKIP LOCKED` on
 * PostgreSQL so several instances share the queue); a failing job is retried with backoff and
 * parked with its last error after `max_attempts`; `stop()` lets running jobs finish.
 */
export class JobRunner {
  readonly #options: Required<Omit<JobRunnerOptions, 'sweeps'>> & { sweeps: Sweep[] };
  readonly #workerId = `worker_${randomUUID()}`;
  readonly #running = new Set<Promise<void>>();
  readonly #sweepsRunning = new Set<Promise<void>>();
  /**
   * The one pending timer of each loop (slot 0 polls, slot i + 1 runs sweep i) and of a wake
   * (WAKE_SLOT); nothing else is kept.
   */
  readonly #timers = new Map<number, unknown>();
  /** Bumped by every start, so a tick still running from before a stop does not schedule again. */
  #generation = 0;
  #stopped = true;
  /** One claim at a time: a job finishing during a claim asks for another round instead. */
  #claiming = false;
  #claimAgain = false;
  /** The polls under way, which a stop waits for: a claim it cut short would leave its jobs claimed. */
  readonly #polling = new Set<Promise<void>>();
  /**
   * Jobs queued in this process wake the runner after WAKE_DELAY_MS; later ones join that poll.
   * Only a started runner is woken, and its stop clears a wake still waiting.
   */
  readonly #wake = () => {
    if (this.#timers.has(WAKE_SLOT)) return;
    const wake = () => {
      this.#timers.delete(WAKE_SLOT);
      return this.#poll();
    };
    this.#timers.set(WAKE_SLOT, this.#options.timers.setTimeout(wake, WAKE_DELAY_MS));
  };

  constructor(options: JobRunnerOptions) {
    this.#options = {
      sweeps: [],
      pollIntervalMs: 1000,
      concurrency: 4,
      perKeyConcurrency: 2,
      leaseMs: 5 * 60_000,
      backoff: defaultBackoff,
      timers: systemTimers,
      ...options,
    };
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#generation++;
    const adapter = adapterOf(this.#options.db);
    const wakes = runnersOf.get(adapter) ?? new Set();
    wakes.add(this.#wake);
    runnersOf.set(adapter, wakes);
    this.#loop(0, () => this.#poll(), this.#options.pollIntervalMs);
    this.#options.sweeps.forEach((sweep, index) => {
      this.#loop(index + 1, () => this.#runSweep(sweep), sweep.intervalMs);
    });
  }

  /** Stops claiming and waits for the claim, jobs and sweeps in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    runnersOf.get(adapterOf(this.#options.db))?.delete(this.#wake);
    for (const timer of this.#timers.values()) this.#options.timers.clearTimeout(timer);
    this.#timers.clear();
    await Promise.allSettled(this.#polling);
    await Promise.allSettled([...this.#running, ...this.#sweepsRunning]);
  }

  /** Runs every due job now, until none is left; for tests and the CLI. Returns how many ran. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const claimed = await this.#claim(this.#options.concurrency);
      if (claimed.length === 0) return total;
      total += claimed.length;
      await Promise.all(claimed.map((job) => this.#execute(job)));
    }
  }

  async runSweeps(): Promise<void> {
    for (const sweep of this.#options.sweeps) await this.#runSweep(sweep);
  }

  /** Runs `tick` now and then `intervalMs` after each run ends, holding one timer in `slot`. */
  #loop(slot: number, tick: () => Promise<void>, intervalMs: number): void {
    const generation = this.#generation;
    const current = () => !this.#stopped && this.#generation === generation;
    const run = async () => {
      this.#timers.delete(slot);
      if (!current()) return;
      await tick();
      if (current()) this.#timers.set(slot, this.#options.timers.setTimeout(run, intervalMs));
    };
    this.#timers.set(slot, this.#options.timers.setTimeout(run, 0));
  }

  async #runSweep(sweep: Sweep): Promise<void> {
    const run = sweep.run().catch((error: unknown) => {
      this.#options.logger.error({ err: error, sweep: sweep.name }, 'sweep failed');
    });
    this.#sweepsRunning.add(run);
    try {
      await run;
    } finally {
      this.#sweepsRunning.delete(run);
    }
  }

  /**
   * Claims as many due jobs as there are free slots and starts them. A job that finishes claims
   * again at once, and a job due now queued in this process wakes the runner (`enqueueJob`): the
   * poll interval only paces an idle runner and finds what other processes queued, so a slot
   * never idles while work is due; a finish or a wake during a claim makes it go round once more.
   */
  #poll(): Promise<void> {
    const polling = this.#claimAndStart();
    this.#polling.add(polling);
    const done = () => void this.#polling.delete(polling);
    polling.then(done, done);
    return polling;
  }

  async #claimAndStart(): Promise<void> {
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = true;
    try {
      do {
        this.#claimAgain = false;
        const free = this.#options.concurrency - this.#running.size;
        if (free <= 0) return;
        let claimed: ClaimedJob[];
        try {
          claimed = await this.#claim(free);
        } catch (error) {
          this.#options.logger.error({ err: error }, 'claiming jobs failed');
          return;
        }
        for (const job of claimed) {
          const execution = this.#execute(job).finally(() => {
            this.#running.delete(execution);
            if (!this.#stopped) void this.#poll();
          });
          this.#running.add(execution);
        }
      } while (this.#claimAgain && !this.#stopped);
    } finally {
      this.#claiming = false;
    }
  }

  /**
   * Claims up to `limit` due jobs, fairly across concurrency keys: the candidates are ranked
   * within their key (oldest first, after the key's jobs running now) and taken rank by rank, so
   * every key with due work gets its first job before any key gets its second; a key with
   * `perKeyConcurrency` jobs running, or held back after failures, gets none. The ranking reads
   * without locks; the claim itself is the conditional update (`FOR UPDATE SKIP LOCKED` on
   * PostgreSQL), so of several instances each job goes to one. Candidates another runner took
   * between the ranking and the claim are made up for by ranking again (`CLAIM_ROUNDS` in all),
   * so the runner that lost the race does not idle a poll interval while work is due. The per-key
   * bound holds per runner; instances racing for one key may together run a few more.
   */
  async #claim(limit: number): Promise<ClaimedJob[]> {
    const claimed: ClaimedJob[] = [];
    for (let round = 0; round < CLAIM_ROUNDS && claimed.length < limit; round++) {
      let candidates: string[];
      let taken: ClaimedJob[];
      try {
        const now = this.#options.clock.now().getTime();
        candidates = await this.#candidates(now, limit - claimed.length);
        taken = candidates.length === 0 ? [] : await this.#take(candidates, now);
      } catch (error) {
        // Jobs an earlier round took are this runner's now: run them rather than leave them
        // claimed by nobody until their lease ends.
        if (claimed.length === 0) throw error;
        this.#options.logger.error({ err: error }, 'claiming more jobs failed; running those claimed');
        return claimed;
      }
      claimed.push(...taken);
      if (candidates.length === 0 || taken.length === candidates.length) break;
    }
    return claimed;
  }

  /** Claims those of `candidates` still due and not being claimed by another runner right now. */
  #take(candidates: string[], now: number): Promise<ClaimedJob[]> {
    const { db, dialect, leaseMs } = this.#options;
    return db
      .updateTable('jobs')
      .set({
        status: 'running',
        attempts: sql`attempts + 1`,
        locked_by: this.#workerId,
        locked_until: now + leaseMs,
        updated_at: now,
      })
      .where('id', 'in', (eb) =>
        eb
          .selectFrom('jobs')
          .select('id')
          .where('id', 'in', candidates)
          .where((w) =>
            w.or([
              w.and([w('status', '=', 'queued'), w('run_at', '<=', now)]),
              w.and([w('status', '=', 'running'), w('locked_until', '<=', now)]),
            ]),
          )
          .$if(dialect === 'postgres', (q) => q.forUpdate().skipLocked()),
      )
      .returning(['id', 'kind', 'payload', 'attempts', 'max_attempts'])
      .execute();
  }

  /**
   * A job without a concurrency key is a key of its own, so it ranks first in it: those are read
   * oldest first and only as many as a claim takes, whatever the backlog. Only keyed jobs are
   * ranked within their key. The limit is written into the SQL, not bound: SQLite runs the query
   * several times faster with a literal limit (at most `concurrency` texts are kept prepared).
   */
  async #candidates(now: number, limit: number): Promise<string[]> {
    const { db, perKeyConcurrency } = this.#options;
    const { rows } = await sql<{ id: string }>`
      with due as (
        select id, run_at, concurrency_key as k
        from jobs
        where ((status = 'queued' and run_at <= ${now}) or (status = 'running' and locked_until <= ${now}))
          and concurrency_key is not null
          and concurrency_key not in (select concurrency_key from job_key_holds where held_until > ${now})
      ),
      busy as (
        select concurrency_key as k, count(*) as n
        from jobs
        where status = 'running' and locked_until > ${now} and concurrency_key is not null
        group by concurrency_key
      ),
      ranked as (
        select due.id, due.run_at,
          row_number() over (partition by due.k order by due.run_at, due.id) + coalesce(busy.n, 0) as slot
        from due left join busy on busy.k = due.k
      ),
      queued_alone as (
        select id, run_at from jobs
        where status = 'queued' and run_at <= ${now} and concurrency_key is null
        order by run_at, id limit ${sql.lit(limit)}
      ),
      expired_alone as (
        select id, run_at from jobs
        where status = 'running' and locked_until <= ${now} and concurrency_key is null
        order by run_at, id limit ${sql.lit(limit)}
      ),
      slotted as (
        select id, run_at, slot from ranked where slot <= ${perKeyConcurrency}
        union all select id, run_at, 1 from queued_alone
        union all select id, run_at, 1 from expired_alone
      )
      select id from slotted order by slot, run_at, id limit ${sql.lit(limit)}
    `.execute(db);
    return rows.map((row) => row.id);
  }

  async #execute(job: ClaimedJob): Promise<void> {
    try {
      await this.#runAndRecord(job);
    } catch (error) {
      this.#options.logger.error(
        { jobId: job.id, kind: job.kind, err: error },
        'recording a job outcome failed; the job runs again when its lease ends',
      );
    }
  }

  async #runAndRecord(job: ClaimedJob): Promise<void> {
    const { definitions, logger } = this.#options;
    const definition = definitions[job.kind];
    if (!definition) {
      await this.#park(job, `no handler for job kind ${job.kind}`);
      return;
    }
    if (job.attempts > job.max_attempts) {
      await this.#giveUp(job, definition, 'lease expired on the last attempt (the worker stopped mid-job)');
      return;
    }
    try {
      await definition.run(JSON.parse(job.payload), {
        jobId: job.id,
        attempt: job.attempts,
        renewLease: () => this.#renewLease(job),
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (job.attempts >= job.max_attempts) {
        logger.error({ jobId: job.id, kind: job.kind, attempts: job.attempts, err: error }, 'job parked');
        await this.#giveUp(job, definition, message);
      } else {
        logger.warn(
          { jobId: job.id, kind: job.kind, attempts: job.attempts, error: message },
          'job failed; retrying',
        );
        await this.#retry(job, message);
      }
      return;
    }
    await this.#finish(job);
  }

  /** The definition hears of it first: if telling it fails, the job is not parked and comes back. */
  async #giveUp(job: ClaimedJob, definition: JobDefinition, reason: string): Promise<void> {
    await definition.onParked?.(JSON.parse(job.payload), reason);
    await this.#park(job, reason);
  }

  #ownedBy(job: ClaimedJob) {
    return this.#options.db
      .updateTable('jobs')
      .where('id', '=', job.id)
      .where('locked_by', '=', this.#workerId)
      .where('status', '=', 'running');
  }

  async #renewLease(job: ClaimedJob): Promise<void> {
    const now = this.#options.clock.now().getTime();
    await this.#ownedBy(job)
      .set({ locked_until: now + this.#options.leaseMs, updated_at: now })
      .execute();
  }

  async #finish(job: ClaimedJob): Promise<void> {
    const now = this.#options.clock.now().getTime();
    await finishJob(this.#options.db, { id: job.id, runner: this.#workerId, now });
  }

  async #retry(job: ClaimedJob, error: string): Promise<void> {
    const now = this.#options.clock.now().getTime();
    await this.#ownedBy(job)
      .set({
        status: 'queued',
        run_at: now + this.#options.backoff(job.attempts),
        locked_until: null,
        locked_by: null,
        last_error: error.slice(0, 2000),
        updated_at: now,
      })
      .execute();
  }

  async #park(job: ClaimedJob, error: string): Promise<void> {
    const now = this.#options.clock.now().getTime();
    await this.#ownedBy(job)
      .set({ status: 'parked', locked_until: null, last_error: error.slice(0, 2000), updated_at: now })
      .execute();
  }
}

/** A job this runner still holds succeeded; a job whose lease another runner took is left to it. */
const finishJob = preparedQuery((db, param: Param<{ id: string; runner: string; now: number }>) =>
  db
    .updateTable('jobs')
    .set({ status: 'succeeded', locked_until: null, updated_at: param('now') })
    .where('id', '=', param('id'))
    .where('locked_by', '=', param('runner'))
    .where('status', '=', 'running'),
);

/** Deletes succeeded jobs last touched before `before`, so the queue table stays small. */
export async function deleteFinishedJobs(db: Db, before: Date): Promise<void> {
  await db
    .deleteFrom('jobs')
    .where('status', '=', 'succeeded')
    .where('updated_at', '<', before.getTime())
    .execute();
}
