import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkIdempotencyKey, deleteExpiredKeys, runIdempotently } from '../../src/idempotency/index.ts';
import { DAY_MS, ManualClock } from '../../src/shared/clock.ts';
import { sha256Hex } from '../../src/shared/ids.ts';
import { createTestDatabase, type TestDatabase, testDialect } from '../helpers/database.ts';

const key = 'key-0123456789abcdef';

async function setup(t: import('node:test').TestContext) {
  const database = await createTestDatabase();
  t.after(() => database.close());
  const clock = new ManualClock();
  return { database, clock, deps: { db: database.db, clock } };
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
    const request = { scope: 's', key, body: {} };
    const first = runIdempotently(deps, request, async () => {
      await gate;
      return { status: 200, body: { ok: true } };
    });
    await new Promise((r) => setTimeout(r, 20));
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

  it('lets a retry take over a key whose holder died, after its lease', async (t) => {
    const { database, clock, deps } = await setup(t);
    await database.db
      .insertInto('idempotency_keys')
      .values({
        scope: 's',
        key: sha256Hex(key),
        fingerprint: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
        state: 'in_flight',
        locked_until: clock.now().getTime() + 60_000,
        response_status: null,
        response_body: null,
        response_headers: null,
        created_at: clock.now().getTime(),
        expires_at: clock.now().getTime() + DAY_MS,
      })
      .execute();
    const c = counter();
    assert.equal(
      (await runIdempotently(deps, { scope: 's', key, body: undefined }, c.handle())).kind,
      'in_flight',
    );
    clock.advance(60_000);
    assert.equal(
      (await runIdempotently(deps, { scope: 's', key, body: undefined }, c.handle())).kind,
      'fresh',
    );
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
