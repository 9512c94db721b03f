// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult } from 'kysely';
import type { Db } from '../../src/db/schema.ts';
import {
  checkIdempotencyKey,
  deleteExpiredKeys,
  fingerprintOf,
  type IdempotencyDeps,
  runIdempotently,
  type StoredResponse,
} from '../../src/idempotency/index.ts';
import { DAY_MS, ManualClock } from '../../src/shared/clock.ts';
import { sha256Hex } from '../../src/shared/ids.ts';
import { createTestDatabase, type TestDatabase, testDialect } from '../helpers/database.ts';

const key = 'key-0123456789abcdef';
const STALE_AFTER_MS = 10_000;

async function setup(t: TestContext, options: { shared?: boolean } = {}) {
  const database = await createTestDatabase(options);
  t.after(() => database.close());
  const clock = new ManualClock();
  const deps: IdempotencyDeps = { db: database.db, clock, staleAfterMs: STALE_AFTER_MS };
  return { database, clock, deps };
}

/** The row a request leaves behind when its process dies while it holds the key. */
async function leaveInFlight(db: Db, clock: ManualClock, scope: string, body: unknown = undefined) {
  const now = clock.now().getTime();
  await db
    .insertInto('idempotency_keys')
    .values({
      scope,
      key: sha256Hex(key),
      fingerprint: fingerprintOf(body),
      state: 'in_flight',
      locked_until: now + STALE_AFTER_MS,
      response_status: null,
      response_body: null,
      response_headers: null,
      created_at: now,
      expires_at: now + DAY_MS,
    })
    .execute();
}

/** A handler that runs until the test lets it answer. */
function gated(response: StoredResponse) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let started = 0;
  return {
    get started() {
      return started;
    },
    open,
    handle: async () => {
      started++;
      await gate;
      return response;
    },
  };
}

/**
 * Makes the key change hands under a request, forever: each time the request finds the key taken
 * it is released, and each time it then finds the key gone another request claims it.
 */
class KeyThatKeepsChangingHands implements KyselyPlugin {
  changes = 0;
  readonly #kinds = new WeakMap<object, string>();
  readonly #db: Db;
  readonly #claimAgain: () => Promise<void>;
  readonly #limit: number;

  constructor(db: Db, claimAgain: () => Promise<void>, limit: number) {
    this.#db = db;
    this.#claimAgain = claimAgain;
    this.#limit = limit;
  }

  transformQuery(args: PluginTransformQueryArgs) {
    this.#kinds.set(args.queryId, args.node.kind);
    return args.node;
  }

  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<Record<string, unknown>>> {
    const kind = this.#kinds.get(args.queryId);
    if (this.changes >= this.#limit) return args.result;
    if (kind === 'InsertQueryNode' && (args.result.numAffectedRows ?? 0n) === 0n) {
      await this.#db.deleteFrom('idempotency_keys').execute();
    } else if (kind === 'SelectQueryNode' && args.result.rows.length === 0) {
      this.changes++;
      await this.#claimAgain();
    }
    return args.result;
  }
}

function counter() {
  let runs = 0;
  return {
    get runs() {
      return runs;
    },
    handle:
      (status = 201) =>
      async () => {
        runs++;
        return { status, body: { run: runs } };
      },
  };
}

async function waitFor(condition: () => boolean) {
  const deadline = Date.now() + 5000;
  while (!condition()) {
    assert.ok(Date.now() < deadline, 'timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function keyCount(database: TestDatabase) {
  return (await database.db.selectFrom('idempotency_keys').selectAll().execute()).length;
}

describe(`idempotency store on ${testDialect}`, () => {
  it('runs once and replays the stored status and body for the same key and body', async (t) => {
    const { deps } = await setup(t);
    const c = counter();
    const request = { scope: 'acp POST /x -', key, body: { a: 1, b: [1, 2] } };
    const first = await runIdempotently(deps, request, c.handle());
    const second = await runIdempotently(deps, { ...request, body: { b: [1, 2], a: 1.0 } }, c.handle());
    assert.deepEqual(first, { kind: 'fresh', response: { status: 201, body: { run: 1 } } });
    assert.deepEqual(second, {
      kind: 'replayed',
      response: { status: 201, body: { run: 1 }, headers: undefined },
    });
    assert.equal(c.runs, 1);
  });

  it('keeps neither the key nor the response readable in the database', async (t) => {
    const { database, deps } = await setup(t);
    await runIdempotently(deps, { scope: 's', key, body: {} }, async () => ({
      status: 201,
      body: { id: 'cs_secret_session_id' },
      headers: { location: '/x/cs_secret_session_id' },
    }));
    const rows = JSON.stringify(await database.db.selectFrom('idempotency_keys').selectAll().execute());
    assert.doesNotMatch(rows, /cs_secret_session_id|key-0123456789abcdef/);
    const replay = await runIdempotently(deps, { scope: 's', key, body: {} }, async () => ({
      status: 500,
      body: null,
    }));
    assert.deepEqual(replay, {
      kind: 'replayed',
      response: {
        status: 201,
        body: { id: 'cs_secret_session_id' },
        headers: { location: '/x/cs_secret_session_id' },
      },
    });
  });

  it('reports a conflict for the same key with another body, and keeps scopes apart', async (t) => {
    const { deps } = await setup(t);
    const c = counter();
    await runIdempotently(deps, { scope: 's1', key, body: { a: 1 } }, c.handle());
    assert.deepEqual(await runIdempotently(deps, { scope: 's1', key, body: { a: 2 } }, c.handle()), {
      kind: 'conflict',
    });
    assert.equal(
      (await runIdempotently(deps, { scope: 's2', key, body: { a: 2 } }, c.handle())).kind,
      'fresh',
    );
    assert.equal(c.runs, 2);
  });

  it('answers in flight while the first request runs', async (t) => {
    const { deps } = await setup(t);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    const request = { scope: 's', key, body: {} };
    const first = runIdempotently(deps, request, async () => {
      running();
      await gate;
      return { status: 200, body: { ok: true } };
    });
    await started;
    const second = await runIdempotently(deps, request, async () => ({ status: 200, body: { ok: false } }));
    assert.equal(second.kind, 'in_flight');
    release();
    assert.equal((await first).kind, 'fresh');
  });

  it('does not keep 5xx answers or thrown errors, so a retry runs again', async (t) => {
    const { database, deps } = await setup(t);
    const c = counter();
    const request = { scope: 's', key, body: {} };
    assert.equal((await runIdempotently(deps, request, c.handle(503))).kind, 'fresh');
    await assert.rejects(
      runIdempotently(deps, request, async () => Promise.reject(new Error('down'))),
      /down/,
    );
    assert.equal(await keyCount(database), 0);
    assert.equal((await runIdempotently(deps, request, c.handle(200))).kind, 'fresh');
    assert.equal((await runIdempotently(deps, request, c.handle(200))).kind, 'replayed');
  });

  it('does not keep a "retry later" answer, so the retry with the same key runs', async (t) => {
    const { deps } = await setup(t);
    const request = { scope: 's', key, body: {} };
    const busy = await runIdempotently(deps, request, async () => ({
      status: 409,
      body: { busy: true },
      keep: false,
    }));
    assert.equal(busy.kind, 'fresh');
    const retried = await runIdempotently(deps, request, async () => ({ status: 200, body: { done: true } }));
    assert.deepEqual(retried, { kind: 'fresh', response: { status: 200, body: { done: true } } });
  });

  it('answers a retry of a crashed request in flight with the seconds left, then lets it take the key over', async (t) => {
    const { database, clock, deps } = await setup(t);
    const request = { scope: 's', key, body: { a: 1 } };
    const crashed = gated({ status: 200, body: { from: 'crashed' } });
    const abandoned = runIdempotently(deps, request, crashed.handle);
    await waitFor(() => crashed.started === 1);
    const retry = counter();

    assert.deepEqual(await runIdempotently(deps, request, retry.handle()), {
      kind: 'in_flight',
      retryAfterSeconds: 10,
    });
    clock.advance(4_500);
    assert.deepEqual(await runIdempotently(deps, request, retry.handle()), {
      kind: 'in_flight',
      retryAfterSeconds: 6,
    });
    clock.advance(5_499);
    assert.deepEqual(await runIdempotently(deps, request, retry.handle()), {
      kind: 'in_flight',
      retryAfterSeconds: 1,
    });
    assert.equal(retry.runs, 0);

    clock.advance(1);
    assert.deepEqual(await runIdempotently(deps, request, retry.handle()), {
      kind: 'fresh',
      response: { status: 201, body: { run: 1 } },
    });
    // The first request was only slow: its late answer is not kept over the retry's.
    crashed.open();
    assert.equal((await abandoned).kind, 'fresh');
    const replay = await runIdempotently(deps, request, retry.handle());
    assert.deepEqual(replay, {
      kind: 'replayed',
      response: { status: 201, body: { run: 1 }, headers: undefined },
    });
    assert.equal(await keyCount(database), 1);
  });

  it('does not let a taken-over request release the key its successor holds', async (t) => {
    const { clock, deps } = await setup(t);
    const request = { scope: 's', key, body: {} };
    let failSlowRequest!: (error: Error) => void;
    const slow = runIdempotently(
      deps,
      request,
      () => new Promise<StoredResponse>((_resolve, reject) => (failSlowRequest = reject)),
    );
    await waitFor(() => failSlowRequest !== undefined);
    clock.advance(STALE_AFTER_MS);
    const successor = gated({ status: 200, body: { from: 'successor' } });
    const running = runIdempotently(deps, request, successor.handle);
    await waitFor(() => successor.started === 1);

    failSlowRequest(new Error('the slow request failed late'));
    await assert.rejects(slow, /failed late/);
    assert.deepEqual(await runIdempotently(deps, request, counter().handle()), {
      kind: 'in_flight',
      retryAfterSeconds: 10,
    });
    successor.open();
    assert.equal((await running).kind, 'fresh');
  });

  it('lets exactly one of two retries racing from two instances take over a stale key', async (t) => {
    const { database, clock, deps } = await setup(t, { shared: true });
    const second = database.reopen();
    t.after(() => second.close());
    const otherInstance: IdempotencyDeps = { ...deps, db: second.db };
    for (let round = 0; round < 10; round++) {
      const scope = `race ${round}`;
      await leaveInFlight(database.db, clock, scope);
      clock.advance(STALE_AFTER_MS);
      const first = gated({ status: 200, body: { instance: 1 } });
      const other = gated({ status: 200, body: { instance: 2 } });
      const retries = [
        runIdempotently(deps, { scope, key, body: undefined }, first.handle),
        runIdempotently(otherInstance, { scope, key, body: undefined }, other.handle),
      ];
      // The handlers wait at their gates, so the first retry to answer is the one that lost.
      assert.equal((await Promise.race(retries)).kind, 'in_flight', `round ${round}`);
      await waitFor(() => first.started + other.started > 0);
      first.open();
      other.open();
      const kinds = (await Promise.all(retries)).map((outcome) => outcome.kind).sort();
      assert.deepEqual(kinds, ['fresh', 'in_flight'], `round ${round}`);
      assert.equal(first.started + other.started, 1, `round ${round}: one handler ran`);
    }
  });

  it('stops looking at a key that keeps changing hands and answers in flight, retry in a second', async (t) => {
    const { database, clock, deps } = await setup(t);
    const scope = 's';
    await leaveInFlight(database.db, clock, scope);
    const flapping = new KeyThatKeepsChangingHands(
      database.db,
      () => leaveInFlight(database.db, clock, scope),
      50,
    );
    const c = counter();
    const outcome = await runIdempotently(
      { ...deps, db: database.db.withPlugin(flapping) },
      { scope, key, body: undefined },
      c.handle(),
    );
    assert.deepEqual(outcome, { kind: 'in_flight', retryAfterSeconds: 1 });
    assert.equal(c.runs, 0);
    assert.ok(flapping.changes <= 3, `looked ${flapping.changes} times`);
  });

  it('forgets keys after 24 hours', async (t) => {
    const { database, clock, deps } = await setup(t);
    const c = counter();
    await runIdempotently(deps, { scope: 's', key, body: { a: 1 } }, c.handle());
    clock.advance(DAY_MS);
    assert.equal(
      (await runIdempotently(deps, { scope: 's', key, body: { a: 2 } }, c.handle())).kind,
      'fresh',
    );
    clock.advance(DAY_MS);
    await deleteExpiredKeys(database.db, clock);
    assert.equal(await keyCount(database), 0);
  });

  it('requires keys of 16 to 255 characters', () => {
    assert.equal(checkIdempotencyKey(undefined), 'missing');
    assert.equal(checkIdempotencyKey('short'), 'too_short');
    assert.equal(checkIdempotencyKey('x'.repeat(256)), 'too_long');
    assert.equal(checkIdempotencyKey('x'.repeat(16)), undefined);
  });
});
