// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type KyselyPlugin, RawNode } from 'kysely';
import { inTransaction } from '../../src/db/transaction.ts';
import {
  enqueueJob,
  type JobDefinition,
  JobRunner,
  type JobRunnerOptions,
  noteKeyOutcome,
  type Timers,
} from '../../src/jobs/index.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createTestDatabase, type TestDatabase, testDialect } from '../helpers/database.ts';

const silent = { info() {}, warn() {}, error() {} };

function runnerFor(
  database: TestDatabase,
  clock: ManualClock,
  definitions: Record<string, JobDefinition>,
  options: Partial<JobRunnerOptions> = {},
) {
  return new JobRunner({
    db: database.db,
    dialect: database.dialect,
    clock,
    logger: silent,
    definitions,
    backoff: (attempt) => attempt * 1000,
    ...options,
  });
}

/** Timers the test fires by hand: each fire runs the due callbacks and waits for the ticks they start. */
function manualTimers() {
  const pending = new Map<number, () => void>();
  const cleared: number[] = [];
  let created = 0;
  const timers: Timers = {
    setTimeout(callback) {
      created++;
      pending.set(created, callback);
      return created;
    },
    clearTimeout(handle) {
      cleared.push(handle as number);
      pending.delete(handle as number);
    },
  };
  return {
    timers,
    pending,
    cleared,
    get created() {
      return created;
    },
    /** Takes the due callbacks off the list and starts them; resolves when their ticks are done. */
    fire(): Promise<unknown> {
      const due = [...pending.values()];
      pending.clear();
      return Promise.all(due.map((callback) => callback()));
    },
  };
}

async function jobRow(database: TestDatabase, id: string) {
  return database.db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe(`job runner on ${testDialect}`, () => {
  it('runs a due job once and marks it succeeded', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const seen: unknown[] = [];
    const runner = runnerFor(database, clock, { echo: { run: async (payload) => void seen.push(payload) } });
    const id = await enqueueJob(database.db, clock.now(), { kind: 'echo', payload: { n: 1 } });
    assert.equal(await runner.drain(), 1);
    assert.equal(await runner.drain(), 0);
    assert.deepEqual(seen, [{ n: 1 }]);
    assert.equal((await jobRow(database, id)).status, 'succeeded');
  });

  it('claims round-robin across concurrency keys, at most the per-key bound of one key, none of a held key', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const ran: string[] = [];
    const runner = new JobRunner({
      db: database.db,
      dialect: database.dialect,
      clock,
      logger: silent,
      concurrency: 4,
      perKeyConcurrency: 2,
      definitions: { work: { run: async (payload) => void ran.push((payload as { key: string }).key) } },
    });
    for (let n = 0; n < 6; n++) {
      await enqueueJob(database.db, clock.now(), {
        kind: 'work',
        payload: { key: 'busy' },
        concurrencyKey: 'busy',
      });
    }
    clock.advance(1);
    await enqueueJob(database.db, clock.now(), {
      kind: 'work',
      payload: { key: 'quiet' },
      concurrencyKey: 'quiet',
    });
    await enqueueJob(database.db, clock.now(), {
      kind: 'work',
      payload: { key: 'held' },
      concurrencyKey: 'held',
    });
    await noteKeyOutcome(database.db, 'held', { succeeded: false, now: clock.now(), backoff: () => 60_000 });
    assert.equal(await runner.drain(), 7);
    // The first claim is the first three runs: two of the busy key (its bound) and the quiet one, though newer.
    assert.deepEqual(ran.slice(0, 3).sort(), ['busy', 'busy', 'quiet']);
    assert.equal(ran.includes('held'), false, 'a held key waits out its hold');
    clock.advance(60_000);
    assert.equal(await runner.drain(), 1);
  });

  it('takes a backlog oldest first, jobs with and without a key alike, and a job whose worker died among them', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const ran: string[] = [];
    const runner = runnerFor(
      database,
      clock,
      { work: { run: async (payload) => void ran.push((payload as { name: string }).name) } },
      { concurrency: 1, perKeyConcurrency: 1 },
    );
    const orphan = await enqueueJob(database.db, clock.now(), { kind: 'work', payload: { name: 'orphan' } });
    await database.db
      .updateTable('jobs')
      .set({ status: 'running', locked_by: 'a worker that died', locked_until: clock.now().getTime() + 1 })
      .where('id', '=', orphan)
      .execute();
    for (const name of ['first', 'keyed', 'second', 'third', 'fourth', 'fifth']) {
      clock.advance(1);
      await enqueueJob(database.db, clock.now(), {
        kind: 'work',
        payload: { name },
        ...(name === 'keyed' ? { concurrencyKey: 'receiver' } : {}),
      });
    }
    clock.advance(1);
    assert.equal(await runner.drain(), 7);
    assert.deepEqual(ran, ['orphan', 'first', 'keyed', 'second', 'third', 'fourth', 'fifth']);
  });
  it('does not run a job before its time', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    let runs = 0;
    const runner = runnerFor(database, clock, { later: { run: async () => void runs++ } });
    await enqueueJob(database.db, clock.now(), {
      kind: 'later',
      payload: {},
      runAt: new Date(clock.now().getTime() + 60_000),
    });
    await runner.drain();
    assert.equal(runs, 0);
    clock.advance(60_000);
    await runner.drain();
    assert.equal(runs, 1);
  });

  it('retries a failing job with backoff, then parks it with its last error', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    let runs = 0;
    const parked: string[] = [];
    const runner = runnerFor(database, clock, {
      flaky: {
        run: async () => {
          runs++;
          throw new Error(`failure ${runs}`);
        },
        onParked: async (_payload, error) => void parked.push(error),
      },
    });
    const id = await enqueueJob(database.db, clock.now(), { kind: 'flaky', payload: {}, maxAttempts: 3 });
    await runner.drain();
    let row = await jobRow(database, id);
    assert.deepEqual([row.status, row.attempts, row.last_error], ['queued', 1, 'failure 1']);
    assert.equal(row.run_at, clock.now().getTime() + 1000);

    await runner.drain();
    assert.equal(runs, 1, 'the retry waits for its backoff');
    clock.advance(1000);
    await runner.drain();
    clock.advance(2000);
    await runner.drain();
    row = await jobRow(database, id);
    assert.deepEqual([row.status, row.attempts, row.last_error], ['parked', 3, 'failure 3']);
    assert.deepEqual(parked, ['failure 3']);
    clock.advance(3_600_000);
    await runner.drain();
    assert.equal(runs, 3, 'a parked job is not run again');
  });

  it('claims a job again when its worker died holding it (lease expired)', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const id = await enqueueJob(database.db, clock.now(), { kind: 'work', payload: {} });
    await database.db
      .updateTable('jobs')
      .set({
        status: 'running',
        attempts: 1,
        locked_by: 'worker_dead',
        locked_until: clock.now().getTime() + 5000,
      })
      .execute();
    let runs = 0;
    const runner = runnerFor(database, clock, { work: { run: async () => void runs++ } });
    await runner.drain();
    assert.equal(runs, 0, 'a live lease is respected');
    clock.advance(5000);
    await runner.drain();
    assert.equal(runs, 1);
    assert.equal((await jobRow(database, id)).status, 'succeeded');
  });

  it('keeps a long job its own while it renews its lease: another runner does not claim it', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const id = await enqueueJob(database.db, clock.now(), { kind: 'long', payload: {} });
    let finish: () => void = () => {};
    let renew: (() => Promise<void>) | undefined;
    let firstDrain: Promise<number> = Promise.resolve(0);
    const started = new Promise<void>((resolveStarted) => {
      const definition: JobDefinition = {
        run: (_payload, context) =>
          new Promise<void>((resolve) => {
            renew = context.renewLease;
            finish = resolve;
            resolveStarted();
          }),
      };
      firstDrain = runnerFor(database, clock, { long: definition }).drain();
    });
    t.after(() => finish());
    await started;
    let secondRuns = 0;
    const second = runnerFor(database, clock, { long: { run: async () => void secondRuns++ } });
    // Past the first lease (5 minutes), renewed on the way: still the first runner's.
    clock.advance(4 * 60_000);
    await renew?.();
    clock.advance(4 * 60_000);
    assert.equal(await second.drain(), 0);
    assert.equal(secondRuns, 0);
    assert.equal((await jobRow(database, id)).locked_until, new Date('2026-01-01T00:09:00.000Z').getTime());
    finish();
    assert.equal(await firstDrain, 1);
    assert.equal((await jobRow(database, id)).status, 'succeeded');
  });

  it('parks a job whose worker died during its last attempt, telling its definition why', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const id = await enqueueJob(database.db, clock.now(), {
      kind: 'work',
      payload: { n: 1 },
      maxAttempts: 1,
    });
    await database.db
      .updateTable('jobs')
      .set({ status: 'running', attempts: 1, locked_by: 'worker_dead', locked_until: clock.now().getTime() })
      .execute();
    const parked: unknown[] = [];
    let runs = 0;
    const runner = runnerFor(database, clock, {
      work: {
        run: async () => void runs++,
        onParked: async (payload, reason) => void parked.push([payload, reason]),
      },
    });
    await runner.drain();
    assert.equal(runs, 0);
    assert.equal((await jobRow(database, id)).status, 'parked');
    assert.deepEqual(parked, [[{ n: 1 }, 'lease expired on the last attempt (the worker stopped mid-job)']]);
  });

  it('keeps running when recording an outcome fails, and logs it', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    await enqueueJob(database.db, clock.now(), { kind: 'work', payload: {}, maxAttempts: 1 });
    const errors: string[] = [];
    const runner = new JobRunner({
      db: database.db,
      dialect: database.dialect,
      clock,
      logger: { ...silent, error: (_object, message) => void errors.push(message) },
      pollIntervalMs: 10,
      definitions: {
        work: {
          run: async () => {
            throw new Error('the receiver is down');
          },
          onParked: async () => {
            throw new Error('the database went away');
          },
        },
      },
    });
    runner.start();
    t.after(() => runner.stop());
    const deadline = Date.now() + 5000;
    while (!errors.includes('recording a job outcome failed; the job runs again when its lease ends')) {
      assert.ok(Date.now() < deadline, `logged: ${errors.join('; ')}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  });

  it('lets a running job finish when stopped', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    let finished = false;
    let started!: () => void;
    const startedPromise = new Promise<void>((resolve) => (started = resolve));
    const runner = new JobRunner({
      db: database.db,
      dialect: database.dialect,
      clock,
      logger: silent,
      pollIntervalMs: 10,
      definitions: {
        slow: {
          run: async () => {
            started();
            await new Promise((r) => setTimeout(r, 200));
            finished = true;
          },
        },
      },
    });
    const id = await enqueueJob(database.db, clock.now(), { kind: 'slow', payload: {} });
    runner.start();
    await startedPromise;
    await runner.stop();
    assert.equal(finished, true);
    assert.equal((await jobRow(database, id)).status, 'succeeded');
  });

  it('lets a running sweep finish when stopped', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    let finished = false;
    let started!: () => void;
    const startedPromise = new Promise<void>((resolve) => (started = resolve));
    const runner = new JobRunner({
      db: database.db,
      dialect: database.dialect,
      clock: new ManualClock(),
      logger: silent,
      definitions: {},
      sweeps: [
        {
          name: 'slow',
          intervalMs: 60_000,
          run: async () => {
            started();
            await new Promise((r) => setTimeout(r, 200));
            finished = true;
          },
        },
      ],
    });
    runner.start();
    await startedPromise;
    await runner.stop();
    assert.equal(finished, true);
  });

  it('shares the queue between instances without running a job twice', {
    skip: testDialect !== 'postgres',
  }, async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const second = database.reopen();
    t.after(() => second.close());
    const clock = new ManualClock();
    for (let i = 0; i < 40; i++)
      await enqueueJob(database.db, clock.now(), { kind: 'count', payload: { i } });
    const runsByJob = new Map<number, number>();
    // Each instance's first jobs wait until the other has started one too (at most 5 s), and each
    // instance polls again until the queue is empty, as its loop would: a claim that lost every
    // ranking to the other instance comes back empty, and a drain ends at the first empty claim,
    // so one instance could otherwise run all 40 and the test say nothing of sharing.
    const started = new Set<string>();
    let bothStarted: () => void = () => {};
    const both = new Promise<void>((resolve) => {
      bothStarted = resolve;
    });
    const fallback = setTimeout(() => bothStarted(), 5000);
    t.after(() => clearTimeout(fallback));
    const countOn = (instance: string): JobDefinition => ({
      run: async (payload) => {
        started.add(instance);
        if (started.size === 2) bothStarted();
        await both;
        const { i } = payload as { i: number };
        runsByJob.set(i, (runsByJob.get(i) ?? 0) + 1);
      },
    });
    const a = runnerFor(database, clock, { count: countOn('a') });
    const b = new JobRunner({
      db: second.db,
      dialect: 'postgres',
      clock,
      logger: silent,
      definitions: { count: countOn('b') },
    });
    const untilQueueEmpty = async (runner: JobRunner) => {
      let ran = 0;
      for (;;) {
        ran += await runner.drain();
        const left = await database.db
          .selectFrom('jobs')
          .select('id')
          .where('status', 'in', ['queued', 'running'])
          .limit(1)
          .execute();
        if (left.length === 0) return ran;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const [ranA, ranB] = await Promise.all([untilQueueEmpty(a), untilQueueEmpty(b)]);
    assert.equal(ranA + ranB, 40);
    assert.ok(ranA > 0 && ranB > 0, `both instances worked (${ranA}/${ranB})`);
    assert.deepEqual(
      [...runsByJob.values()].filter((n) => n !== 1),
      [],
    );
  });

  it('ranks again when another instance took the jobs it ranked, instead of idling until its next poll', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    for (let i = 0; i < 8; i++) await enqueueJob(database.db, clock.now(), { kind: 'count', payload: { i } });
    const runs = new Map<number, string[]>();
    const record = (instance: string, payload: unknown) => {
      const { i } = payload as { i: number };
      runs.set(i, [...(runs.get(i) ?? []), instance]);
    };

    // Instance a takes the four oldest jobs and holds them until the end of the test.
    let aHoldsFour: () => void = () => {};
    const aHolding = new Promise<void>((resolve) => {
      aHoldsFour = resolve;
    });
    let releaseA: () => void = () => {};
    const aMayFinish = new Promise<void>((resolve) => {
      releaseA = resolve;
    });
    const a = new JobRunner({
      db: database.db,
      dialect: database.dialect,
      clock,
      logger: silent,
      concurrency: 4,
      definitions: {
        count: {
          run: async (payload) => {
            record('a', payload);
            if (runs.size === 4) aHoldsFour();
            await aMayFinish;
          },
        },
      },
    });
    let aDrained: Promise<number> = Promise.resolve(0);
    t.after(() => releaseA());

    // Instance b ranks the same four oldest jobs; before its claim, a takes them.
    const rankings = new WeakSet<object>();
    let raced = false;
    const aClaimsBetweenRankingAndClaim: KyselyPlugin = {
      transformQuery({ node, queryId }) {
        if (RawNode.is(node) && node.sqlFragments.join('').includes('with due as')) rankings.add(queryId);
        return node;
      },
      async transformResult({ queryId, result }) {
        if (rankings.has(queryId) && !raced) {
          raced = true;
          aDrained = a.drain();
          await aHolding;
        }
        return result;
      },
    };
    const b = new JobRunner({
      db: database.db.withPlugin(aClaimsBetweenRankingAndClaim),
      dialect: database.dialect,
      clock,
      logger: silent,
      concurrency: 4,
      definitions: { count: { run: async (payload) => record('b', payload) } },
    });

    assert.equal(await b.drain(), 4, 'b ranked again and took the four jobs a left');
    assert.equal(raced, true);
    releaseA();
    assert.equal(await aDrained, 4);
    assert.deepEqual(
      [...runs.entries()].sort(([x], [y]) => x - y).map(([i, ran]) => [i, ran.join()]),
      [0, 1, 2, 3, 4, 5, 6, 7].map((i) => [i, i < 4 ? 'a' : 'b']),
    );
  });

  it('runs the jobs a claim took when ranking again fails, instead of leaving them claimed by nobody', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    for (let i = 0; i < 8; i++) await enqueueJob(database.db, clock.now(), { kind: 'count', payload: { i } });
    const ranBy = new Map<number, string>();
    let releaseA: () => void = () => {};
    const aMayFinish = new Promise<void>((resolve) => {
      releaseA = resolve;
    });
    t.after(() => releaseA());
    let aHoldsTwo: () => void = () => {};
    const aHolding = new Promise<void>((resolve) => {
      aHoldsTwo = resolve;
    });
    const a = new JobRunner({
      db: database.db,
      dialect: database.dialect,
      clock,
      logger: silent,
      concurrency: 2,
      definitions: {
        count: {
          run: async (payload) => {
            ranBy.set((payload as { i: number }).i, 'a');
            if (ranBy.size === 2) aHoldsTwo();
            await aMayFinish;
          },
        },
      },
    });
    let aDrained: Promise<number> = Promise.resolve(0);

    // b's first ranking names the four oldest; a then takes two of them, so b takes two and ranks
    // again, and that second ranking fails (the database went away for a moment).
    let rankings = 0;
    const rankingQueries = new WeakSet<object>();
    const raceThenFail: KyselyPlugin = {
      transformQuery({ node, queryId }) {
        if (RawNode.is(node) && node.sqlFragments.join('').includes('with due as')) {
          rankings++;
          if (rankings === 2) throw new Error('connection lost');
          rankingQueries.add(queryId);
        }
        return node;
      },
      async transformResult({ queryId, result }) {
        if (rankingQueries.has(queryId) && rankings === 1) {
          aDrained = a.drain();
          await aHolding;
        }
        return result;
      },
    };
    const errors: string[] = [];
    const b = new JobRunner({
      db: database.db.withPlugin(raceThenFail),
      dialect: database.dialect,
      clock,
      logger: { ...silent, error: (_object: object, message: string) => void errors.push(message) },
      concurrency: 4,
      definitions: {
        count: { run: async (payload) => void ranBy.set((payload as { i: number }).i, 'b') },
      },
    });

    assert.equal(await b.drain(), 6, 'the two it took before the failure, then the four a left');
    assert.deepEqual(errors, ['claiming more jobs failed; running those claimed']);
    releaseA();
    assert.equal(await aDrained, 2);
    assert.deepEqual(
      [...ranBy.entries()].sort(([x], [y]) => x - y).map(([, instance]) => instance),
      ['a', 'a', 'b', 'b', 'b', 'b', 'b', 'b'],
    );
  });

  it('keeps one job per dedupe key and returns its id to every enqueuer', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const first = await enqueueJob(database.db, clock.now(), {
      kind: 'x',
      payload: { n: 1 },
      dedupeKey: 'k1',
    });
    clock.advance(1000);
    const second = await database.db
      .transaction()
      .execute((trx) => enqueueJob(trx, clock.now(), { kind: 'x', payload: { n: 2 }, dedupeKey: 'k1' }));
    const other = await enqueueJob(database.db, clock.now(), { kind: 'x', payload: {}, dedupeKey: 'k2' });
    assert.equal(second, first);
    assert.notEqual(other, first);
    const rows = await database.db.selectFrom('jobs').selectAll().orderBy('created_at').execute();
    assert.deepEqual(
      rows.map((row) => [row.id, row.payload, row.dedupe_key]),
      [
        [first, '{"n":1}', 'k1'],
        [other, '{}', 'k2'],
      ],
    );
  });

  it('holds one timer per loop however many ticks it runs, and none after stop', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const fake = manualTimers();
    let sweeps = 0;
    const ran: unknown[] = [];
    const runner = runnerFor(
      database,
      clock,
      { echo: { run: async (payload) => void ran.push(payload) } },
      {
        timers: fake.timers,
        sweeps: [{ name: 'count', intervalMs: 60_000, run: async () => void sweeps++ }],
      },
    );
    runner.start();
    t.after(() => runner.stop());
    assert.equal(fake.pending.size, 2, 'one poll timer and one per sweep');

    const ticks = 2000;
    for (let tick = 1; tick <= ticks; tick++) {
      if (tick % 500 === 0) await enqueueJob(database.db, clock.now(), { kind: 'echo', payload: { tick } });
      await fake.fire();
      assert.equal(fake.pending.size, 2, `after tick ${tick}`);
    }
    assert.equal(sweeps, ticks);
    assert.equal(fake.created, 2 * (ticks + 1) + 4, 'and one wake for each job queued');

    const live = [...fake.pending.keys()];
    await runner.stop();
    assert.deepEqual(fake.cleared.sort(), live.sort(), 'stop clears the live timers and holds no others');
    assert.equal(fake.pending.size, 0);
    assert.deepEqual(ran, [{ tick: 500 }, { tick: 1000 }, { tick: 1500 }, { tick: 2000 }]);
  });

  it('is woken once a due job queued in this process commits, one wake for jobs queued together', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    const fake = manualTimers();
    const ran: unknown[] = [];
    const runner = runnerFor(
      database,
      clock,
      { echo: { run: async (payload) => void ran.push(payload) } },
      { timers: fake.timers },
    );
    runner.start();
    t.after(() => runner.stop());
    await fake.fire();
    assert.equal(fake.pending.size, 1, 'only the poll loop waits');

    await inTransaction(database.db, async (trx) => {
      await enqueueJob(trx, clock.now(), { kind: 'echo', payload: { n: 1 } });
      await enqueueJob(trx, clock.now(), { kind: 'echo', payload: { n: 2 } });
      assert.equal(fake.pending.size, 1, 'no wake before the commit');
    });
    await enqueueJob(database.db, clock.now(), { kind: 'echo', payload: { n: 3 } });
    assert.equal(fake.pending.size, 2, 'one wake for the three jobs');

    const later = new Date(clock.now().getTime() + 60_000);
    await enqueueJob(database.db, clock.now(), { kind: 'echo', payload: { n: 4 }, runAt: later });
    await assert.rejects(
      inTransaction(database.db, async (trx) => {
        await enqueueJob(trx, clock.now(), { kind: 'echo', payload: { n: 5 } });
        throw new Error('rolled back');
      }),
    );
    const other = await createTestDatabase();
    t.after(() => other.close());
    await enqueueJob(other.db, clock.now(), { kind: 'echo', payload: { n: 6 } });
    assert.equal(
      fake.pending.size,
      2,
      'a job due later, a rolled-back one and another database wake nothing more',
    );

    const wake = [...fake.pending.entries()].at(-1);
    assert.ok(wake);
    fake.pending.delete(wake[0]);
    await wake[1]();
    await runner.stop();
    assert.deepEqual(ran.map((payload) => (payload as { n: number }).n).sort(), [1, 2, 3]);
    await enqueueJob(database.db, clock.now(), { kind: 'echo', payload: { n: 7 } });
    assert.equal(fake.pending.size, 0, 'a stopped runner is not woken');
  });

  it('starts a job queued in this process without waiting for its poll interval', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const clock = new ManualClock();
    let ran!: (payload: unknown) => void;
    const running = new Promise((resolve) => (ran = resolve));
    // Real timers, with word of the first tick's end: the job is queued after the start's own
    // poll has looked and found nothing, so only a wake can run it before the 60 s poll.
    let firstTickDone!: () => void;
    const firstTick = new Promise<void>((resolve) => (firstTickDone = resolve));
    const timers: Timers = {
      setTimeout: (callback, ms) =>
        setTimeout(async () => {
          await callback();
          firstTickDone();
        }, ms),
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
    };
    const runner = runnerFor(
      database,
      clock,
      { echo: { run: async (payload) => ran(payload) } },
      { pollIntervalMs: 60_000, timers },
    );
    runner.start();
    t.after(() => runner.stop());
    await firstTick;
    const id = await enqueueJob(database.db, clock.now(), { kind: 'echo', payload: { n: 1 } });
    assert.deepEqual(await running, { n: 1 });
    await runner.stop();
    assert.equal((await jobRow(database, id)).status, 'succeeded');
  });

  it('does not let a tick that outlives a stop schedule again after a restart', async (t) => {
    const database = await createTestDatabase();
    t.after(() => database.close());
    const fake = manualTimers();
    const runner = new JobRunner({
      db: database.db,
      dialect: database.dialect,
      clock: new ManualClock(),
      logger: silent,
      timers: fake.timers,
      definitions: {},
    });
    runner.start();
    t.after(() => runner.stop());
    const tickInFlight = fake.fire();
    await runner.stop();
    runner.start();
    await tickInFlight;
    assert.equal(fake.pending.size, 1, 'only the restarted poll loop holds a timer');
  });
});
