// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { freezeOnceAt, startPurchaseFixture } from '../helpers/purchase.ts';
import { completeBody, createBody, expectError, expectSession, injectingClient } from './acp-client.ts';

describe(`ACP idempotency on ${testDialect}`, () => {
  it('replays create and complete for the same key and body, with Idempotent-Replayed and no second charge', async (t) => {
    const { runtime, mintToken, counts } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const body = createBody('svc-pro-annual', 'a@example.com');
    const createKey = randomUUID();
    const first = await acp.create(body, { key: createKey });
    const replay = await acp.create(body, { key: createKey });
    const session = expectSession(first, 201);
    assert.deepEqual([replay.status, replay.text], [201, first.text]);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(first.headers['idempotent-replayed'], undefined);
    assert.deepEqual(
      [first.headers['idempotency-key'], replay.headers['idempotency-key']],
      [createKey, createKey],
    );
    assert.notEqual(
      expectSession(await acp.create(body), 201).id,
      session.id,
      'another key is another session',
    );

    const token = await mintToken();
    const completeKey = randomUUID();
    const paid = await acp.complete(session.id, completeBody(token), { key: completeKey });
    const again = await acp.complete(session.id, completeBody(token), { key: completeKey });
    assert.equal(expectSession(paid).status, 'completed');
    assert.deepEqual(
      [again.status, again.text, again.headers['idempotent-replayed']],
      [200, paid.text, 'true'],
    );
    assert.deepEqual([(await counts()).paymentIntents, (await counts()).orders], [1, 1]);
    // A new key on a completed session is a new request: refused, not replayed.
    expectError(await acp.complete(session.id, completeBody(token)), 405, 'session_not_modifiable');
  });

  it('refuses a reused key with another body (422) and a missing or short key (400)', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const key = randomUUID();
    expectSession(await acp.create(createBody('svc-pro-monthly'), { key }), 201);
    expectError(await acp.create(createBody('svc-pro-annual'), { key }), 422, 'idempotency_conflict');
    expectError(
      await acp.create(createBody('svc-pro-monthly'), { key: null }),
      400,
      'idempotency_key_required',
    );
    expectError(
      await acp.create(createBody('svc-pro-monthly'), { key: '123456789012345' }),
      400,
      'invalid_idempotency_key',
    );
    const session = expectSession(
      await acp.create(createBody('svc-pro-monthly'), { key: '1234567890123456' }),
      201,
    );
    expectError(await acp.cancel(session.id, undefined, { key: null }), 400, 'idempotency_key_required');
    const sessions = await runtime.database.db.selectFrom('checkout_sessions').select('id').execute();
    assert.equal(sessions.length, 2);
  });

  it('answers a concurrent duplicate with 409 idempotency_in_flight and Retry-After', async (t) => {
    const { runtime, sandbox, mintToken, counts } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'a@example.com')), 201);
    const token = await mintToken();
    sandbox.faults.latency(300);
    const key = randomUUID();
    const replies = await Promise.all([
      acp.complete(session.id, completeBody(token), { key }),
      acp.complete(session.id, completeBody(token), { key }),
    ]);
    const [winner, duplicate] = replies.sort((a, b) => a.status - b.status);
    assert.ok(winner && duplicate);
    assert.equal(expectSession(winner).status, 'completed');
    expectError(duplicate, 409, 'idempotency_in_flight');
    assert.match(duplicate.headers['retry-after'] ?? '', /^[1-9]\d*$/);
    assert.equal((await counts()).paymentIntents, 1);
  });

  it('charges a session once under 20 concurrent completes with different keys and tokens', async (t) => {
    const { runtime, mintToken, counts } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const session = expectSession(
      await acp.create(createBody('svc-enterprise-annual', 'a@example.com')),
      201,
    );
    const tokens = await Promise.all(Array.from({ length: 20 }, () => mintToken()));
    const replies = await Promise.all(tokens.map((token) => acp.complete(session.id, completeBody(token))));
    const statuses = replies.map((reply) => reply.status);
    assert.ok(
      statuses.every((status) => [200, 405, 409].includes(status)),
      statuses.join(),
    );
    for (const reply of replies) {
      if (reply.status === 200) assert.equal(expectSession(reply).status, 'completed');
      if (reply.status === 409) expectError(reply, 409, 'payment_in_progress');
      if (reply.status === 405) expectError(reply, 405, 'session_not_modifiable');
    }
    assert.ok(statuses.includes(200));
    assert.equal(expectSession(await acp.get(session.id)).status, 'completed');
    assert.deepEqual(await counts(), {
      paymentIntents: 1,
      succeeded: 1,
      orders: 1,
      workspaces: 1,
      emails: 0,
    });
  });

  it('does not keep a "retry later" answer under the key: the same key then finishes the payment', async (t) => {
    const { runtime, sandbox, mintToken, counts } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'a@example.com')), 201);
    const token = await mintToken();
    const key = randomUUID();
    sandbox.faults.failNext(3, 500); // the first try and both SDK retries
    const unknown = await acp.complete(session.id, completeBody(token), { key });
    expectError(unknown, 409, 'payment_in_progress');
    assert.match(unknown.headers['retry-after'] ?? '', /^[1-9]\d*$/);

    const retried = await acp.complete(session.id, completeBody(token), { key });
    assert.equal(retried.headers['idempotent-replayed'], undefined, 'answered afresh, not replayed');
    assert.equal(expectSession(retried).status, 'completed');
    assert.equal(expectSession(await acp.get(session.id)).status, 'completed');
    assert.equal((await counts()).succeeded, 1);
  });

  it('answers a provider refusal with 502 processing_error, not kept: the same key then pays', async (t) => {
    const { runtime, sandbox, mintToken, counts } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'a@example.com')), 201);
    const token = await mintToken();
    const key = randomUUID();
    sandbox.faults.failNext(1, 401);
    const refused = await acp.complete(session.id, completeBody(token), { key });
    assert.equal(expectError(refused, 502, 'payment_failed').type, 'processing_error');
    const retried = await acp.complete(session.id, completeBody(token), { key });
    assert.equal(retried.headers['idempotent-replayed'], undefined);
    assert.equal(expectSession(retried).status, 'completed');
    assert.equal((await counts()).succeeded, 1);
  });

  it('lets one of two retries take over the key of a complete that died, after IDEMPOTENCY_STALE_AFTER_MS', async (t) => {
    const frozen = freezeOnceAt('after_claim');
    const { runtime, clock, mintToken, counts } = await startPurchaseFixture(t, {
      failpoints: frozen.failpoints,
      env: { IDEMPOTENCY_STALE_AFTER_MS: '20000' },
    });
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'a@example.com')), 201);
    const body = completeBody(await mintToken());
    const key = randomUUID();
    const died = acp.complete(session.id, body, { key });
    await frozen.reached;

    const early = await acp.complete(session.id, body, { key });
    expectError(early, 409, 'idempotency_in_flight');
    // The holder names its instance: the retry looks again as soon as that one could be known gone.
    assert.equal(early.headers['retry-after'], '3');
    clock.advance(15_000);
    assert.equal((await acp.complete(session.id, body, { key })).headers['retry-after'], '3');
    clock.advance(3_000);
    assert.equal((await acp.complete(session.id, body, { key })).headers['retry-after'], '2');

    clock.advance(2_000);
    const retries = await Promise.all([
      acp.complete(session.id, body, { key }),
      acp.complete(session.id, body, { key }),
    ]);
    // The one answered afresh took the key over; the other was in flight or a replay of it.
    const taker = retries.find((reply) => reply.status === 200 && !reply.headers['idempotent-replayed']);
    const other = retries.find((reply) => reply !== taker);
    assert.ok(taker && other, retries.map((reply) => reply.text).join('\n'));
    assert.equal(expectSession(taker).status, 'completed');
    if (other.status === 409) expectError(other, 409, 'idempotency_in_flight');
    else assert.deepEqual([other.text, other.headers['idempotent-replayed']], [taker.text, 'true']);
    assert.deepEqual(await counts(), {
      paymentIntents: 1,
      succeeded: 1,
      orders: 1,
      workspaces: 1,
      emails: 0,
    });

    frozen.kill();
    assert.equal((await died).status, 500);
    const replay = await acp.complete(session.id, body, { key });
    assert.deepEqual([replay.status, replay.text], [200, taker.text]);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
  });

  it('charges once when the key of a complete that died waiting on the provider is taken over', async (t) => {
    const frozen = freezeOnceAt('after_charge');
    const { runtime, clock, mintToken, counts } = await startPurchaseFixture(t, {
      failpoints: frozen.failpoints,
    });
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'a@example.com')), 201);
    const body = completeBody(await mintToken());
    const key = randomUUID();
    const died = acp.complete(session.id, body, { key });
    await frozen.reached;

    assert.equal((await acp.complete(session.id, body, { key })).headers['retry-after'], '3');
    clock.advance(30_000);
    // The key is taken over; the purchase's own charge lease still keeps the provider call to one.
    const blocked = await acp.complete(session.id, body, { key });
    expectError(blocked, 409, 'payment_in_progress');
    clock.advance(60_000);
    const paid = await acp.complete(session.id, body, { key });
    assert.equal(expectSession(paid).status, 'completed');
    assert.deepEqual(await counts(), {
      paymentIntents: 1,
      succeeded: 1,
      orders: 1,
      workspaces: 1,
      emails: 0,
    });
    frozen.kill();
    await died;
  });
});
