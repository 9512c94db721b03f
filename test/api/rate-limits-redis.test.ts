// db-scope: both

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import type { TestContext } from 'node:test';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { ManualClock } from '../../src/shared/clock.ts';
import { type ApiFixture, type ApiResponse, startApiFixture } from '../helpers/api.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';
import { freePort } from '../helpers/ports.ts';
import { redisServerInstalled, startOwnRedis, TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis.ts';

interface Instance {
  api: ApiFixture;
  /** Every log line of the instance at debug level and above. */
  logs: { level: number; msg: string }[];
}

/**
 * Two instances of the service on one database (as behind a load balancer), with `env` on top of
 * the test defaults; the first instance's organization and key work on both.
 */
async function startTwoInstances(t: TestContext, env: Record<string, string>): Promise<[Instance, Instance]> {
  const database = await createTestDatabase({ shared: true });
  const second = database.reopen();
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  const start = async (handle: typeof database): Promise<Instance> => {
    const logs: Instance['logs'] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).trim().split('\n')) logs.push(JSON.parse(line));
        done();
      },
    });
    const api = await startApiFixture(t, {
      env,
      clock,
      database: handle,
      logger: pino({ level: 'debug' }, sink),
    });
    return { api, logs };
  };
  const instances: [Instance, Instance] = [await start(database), await start({ ...database, ...second })];
  // After-hooks run in the order they were added: the instances close before their database.
  t.after(async () => {
    await second.close();
    await database.close();
  });
  return instances;
}

/** `GET /me` on `instance` with the first instance's key. */
function me(instance: Instance, key: string): Promise<ApiResponse> {
  return instance.api.call('GET', '/me', { key });
}

function rateLimitHeaders(response: ApiResponse) {
  return {
    status: response.status,
    limit: response.headers.get('ratelimit-limit'),
    remaining: response.headers.get('ratelimit-remaining'),
  };
}

const warnings = (instance: Instance) =>
  instance.logs.filter((line) => line.level === 40).map((line) => line.msg);
const infos = (instance: Instance, text: string) =>
  instance.logs.filter((line) => line.level === 30 && line.msg.includes(text));

async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) assert.fail(`${what} did not happen within ${timeoutMs} ms`);
    await sleep(100);
  }
}

describe(`rate limits shared through Redis on ${testDialect}`, {
  skip: !TEST_REDIS_URL && 'TEST_REDIS_URL is not set',
}, () => {
  const shared = () => ({
    REDIS_URL: TEST_REDIS_URL ?? '',
    REDIS_KEY_PREFIX: uniqueKeyPrefix(),
    // Generous: the machine running the suite may be busy; the outage tests shorten it.
    REDIS_TIMEOUT_MS: '2000',
  });

  it('share the per-key limit: the second instance answers 429 once the first used the budget', async (t) => {
    const [first, second] = await startTwoInstances(t, { ...shared(), API_RATE_LIMIT_PER_KEY: '3' });
    const key = first.api.org.key;
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(rateLimitHeaders(await me(first, key)));
    assert.deepEqual(answers, [
      { status: 200, limit: '3', remaining: '2' },
      { status: 200, limit: '3', remaining: '1' },
      { status: 200, limit: '3', remaining: '0' },
    ]);
    const limited = await me(second, key);
    assert.deepEqual(rateLimitHeaders(limited), { status: 429, limit: '3', remaining: '0' });
    assert.equal(limited.body.code, 'rate_limited');
    assert.equal(limited.headers.get('retry-after'), '60', 'the window started at 12:00:00 on the clock');
    assert.equal(limited.headers.get('ratelimit-reset'), '60');
    assert.equal((await me(second, second.api.org.key)).status, 200, "another key's budget is its own");
    for (const instance of [first, second])
      assert.deepEqual(warnings(instance), [], 'Redis was reachable throughout');
  });

  it('share the per-address limit of each checkout surface, each surface with its own budget', async (t) => {
    const [first, second] = await startTwoInstances(t, { ...shared(), RATE_LIMIT_MAX: '2' });
    const acp = (instance: Instance) => fetch(`${instance.api.url}/api/acp/checkout_sessions/cs_unknown`);
    const ucp = (instance: Instance) => fetch(`${instance.api.url}/api/ucp/v1/checkout-sessions/cs_unknown`);
    assert.equal((await acp(first)).status, 404);
    assert.equal((await acp(first)).status, 404);
    const limited = await acp(second);
    assert.equal(limited.status, 429);
    assert.equal(limited.headers.get('retry-after'), '60');
    assert.equal((await ucp(second)).status, 404, 'UCP counts apart from ACP');
    assert.equal((await ucp(first)).status, 404);
    assert.equal((await ucp(second)).status, 429);
    for (const instance of [first, second])
      assert.deepEqual(warnings(instance), [], 'Redis was reachable throughout');
  });

  it('a Redis nobody answers on: requests still answer, each instance counts in process, one warning', async (t) => {
    const env = {
      ...shared(),
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
      API_RATE_LIMIT_PER_KEY: '3',
    };
    const [first, second] = await startTwoInstances(t, env);
    const key = first.api.org.key;
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(rateLimitHeaders(await me(first, key)));
    assert.deepEqual(answers, [
      { status: 200, limit: '3', remaining: '2' },
      { status: 200, limit: '3', remaining: '1' },
      { status: 200, limit: '3', remaining: '0' },
      { status: 429, limit: '3', remaining: '0' },
      { status: 429, limit: '3', remaining: '0' },
    ]);
    assert.equal((await me(second, key)).status, 200, 'the second instance counts its own share');
    for (const instance of [first, second]) {
      assert.deepEqual(warnings(instance), [
        'Redis unreachable: rate limits are counted per instance until it answers again',
      ]);
    }
  });

  it('a Redis that stops mid-run: requests answer in process, then the limit is shared again once it is back', {
    skip: !redisServerInstalled() && 'redis-server is not installed',
  }, async (t) => {
    const redis = await startOwnRedis(t);
    const [first, second] = await startTwoInstances(t, {
      ...shared(),
      REDIS_URL: redis.url,
      API_RATE_LIMIT_PER_KEY: '3',
    });
    const key = first.api.org.key;
    assert.equal((await me(first, key)).status, 200);
    assert.equal((await me(second, key)).status, 200);

    await redis.kill();
    const during = [];
    for (let i = 0; i < 4; i++) during.push(rateLimitHeaders(await me(first, key)));
    assert.deepEqual(
      during,
      [
        { status: 200, limit: '3', remaining: '2' },
        { status: 200, limit: '3', remaining: '1' },
        { status: 200, limit: '3', remaining: '0' },
        { status: 429, limit: '3', remaining: '0' },
      ],
      'while Redis is away the instance counts the requests it sees',
    );
    assert.equal(warnings(first).length, 1, 'one warning for the whole outage');

    await redis.restart();
    await eventually('both instances reconnecting', () =>
      [first, second].every((instance) => infos(instance, 'Redis answers again').length === 1),
    );
    first.api.runtime.clock.advance(60_000);
    for (let i = 0; i < 3; i++) assert.equal((await me(first, key)).status, 200);
    assert.equal((await me(second, key)).status, 429, 'shared again: the first instance used the budget');
  });

  it('a Redis that stops answering without closing the connection: requests wait at most the timeout', {
    skip: !redisServerInstalled() && 'redis-server is not installed',
  }, async (t) => {
    const redis = await startOwnRedis(t);
    const [first, second] = await startTwoInstances(t, {
      ...shared(),
      REDIS_URL: redis.url,
      REDIS_TIMEOUT_MS: '200',
      API_RATE_LIMIT_PER_KEY: '3',
    });
    const key = first.api.org.key;
    assert.equal((await me(second, key)).status, 200);

    redis.freeze();
    const started = performance.now();
    const during = [];
    for (let i = 0; i < 4; i++) during.push((await me(first, key)).status);
    const elapsed = performance.now() - started;
    assert.deepEqual(during, [200, 200, 200, 429], 'counted in process while Redis hangs');
    assert.ok(
      elapsed < 2000,
      `four requests took ${Math.round(elapsed)} ms; only the first waits the timeout`,
    );
    assert.equal(warnings(first).length, 1);

    redis.thaw();
    await eventually('Redis answering again', async () => {
      await me(first, first.api.org.key);
      return infos(first, 'Redis answers again').length === 1;
    });
    first.api.runtime.clock.advance(60_000);
    for (let i = 0; i < 3; i++) assert.equal((await me(second, key)).status, 200);
    assert.equal((await me(first, key)).status, 429, 'shared again');
  });
});
