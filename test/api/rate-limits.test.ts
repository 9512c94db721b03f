// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sql } from 'kysely';
import { startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { capturedLogger } from '../helpers/logs.ts';

describe(`REST API rate limits on ${testDialect}`, () => {
  it('limit each key, with RateLimit headers on every answer and 429 + Retry-After past the limit', async (t) => {
    const api = await startApiFixture(t, {
      env: { API_RATE_LIMIT_PER_KEY: '3', RATE_LIMIT_WINDOW_MS: '60000' },
    });
    const other = await api.createOrganization('Other');
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await api.call('GET', '/me');
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('ratelimit-limit'), '3');
      remaining.push(response.headers.get('ratelimit-remaining') ?? '');
    }
    assert.deepEqual(remaining, ['2', '1', '0']);
    const limited = await api.call('GET', '/me');
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'rate_limited');
    assert.match(limited.headers.get('content-type') ?? '', /^application\/problem\+json/);
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(
      (await api.call('GET', '/me', { key: other.key })).status,
      200,
      'another key has its own budget',
    );
  });

  it('limit each client address before looking at the key', async (t) => {
    const api = await startApiFixture(t, { env: { API_RATE_LIMIT_PER_IP: '4' } });
    const other = await api.createOrganization('Other');
    const statuses: number[] = [];
    for (const key of [api.org.key, other.key, null, 'svc_live_bogus', api.org.key]) {
      statuses.push((await api.call('GET', '/me', { key })).status);
    }
    assert.deepEqual(statuses, [200, 200, 401, 401, 429]);
    const limited = await api.call('GET', '/openapi.json', { key: null });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.code, 'rate_limited');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal(limited.headers.get('ratelimit-limit'), '4');
    assert.equal(limited.headers.get('ratelimit-remaining'), '0');
    assert.equal(limited.headers.get('ratelimit-reset'), limited.headers.get('retry-after'));
  });

  it('start afresh once the clock passes the window, with no waiting', async (t) => {
    const api = await startApiFixture(t, {
      env: { API_RATE_LIMIT_PER_KEY: '2', RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '60000' },
    });
    const clock = api.runtime.clock;
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await api.call('GET', '/me')).status);
    assert.deepEqual(statuses, [200, 200, 429]);

    clock.advance(59_000);
    const stillLimited = await api.call('GET', '/me');
    assert.equal(stillLimited.status, 429);
    assert.equal(stillLimited.headers.get('retry-after'), '1', 'one second of the window is left');

    clock.advance(1_000);
    const next = await api.call('GET', '/me');
    assert.equal(next.status, 200, 'a new window');
    assert.equal(next.headers.get('ratelimit-remaining'), '1');
    assert.equal(next.headers.get('ratelimit-reset'), '60');

    const acp = () => fetch(`${api.url}/api/acp/checkout_sessions/cs_unknown`);
    assert.equal((await acp()).status, 404);
    assert.equal((await acp()).status, 429);
    clock.advance(60_000);
    assert.equal((await acp()).status, 404, 'the checkout surface starts afresh too');
  });

  it('answer 500 when a key cannot be looked up, and go on answering keys verified a moment ago', async (t) => {
    const api = await startApiFixture(t);
    assert.equal((await api.call('GET', '/me')).status, 200);
    const unverified = await api.createOrganization('Other');
    const db = api.runtime.database.db;
    await sql`alter table api_keys rename to api_keys_away`.execute(db);
    try {
      const failed = await api.call('GET', '/me', { key: unverified.key });
      assert.deepEqual([failed.status, failed.body.code], [500, 'internal_error']);
      assert.match(failed.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal((await api.call('GET', '/me')).status, 200, 'a key verified before answers from memory');
    } finally {
      await sql`alter table api_keys_away rename to api_keys`.execute(db);
    }
    assert.equal((await api.call('GET', '/me', { key: unverified.key })).status, 200);
  });

  it('answer a revoked key with a 401 alone: nothing counted for it, nothing logged as wrong', async (t) => {
    const { logger, lines } = capturedLogger('info');
    const api = await startApiFixture(t, {
      env: { API_RATE_LIMIT_PER_KEY: '1' },
      logger,
    });
    const revoked = await api.createOrganization('Revoked');
    await api.runtime.database.db
      .updateTable('api_keys')
      .set({ revoked_at: api.runtime.clock.now().getTime() })
      .where('id', '=', revoked.keyId)
      .execute();
    for (let i = 0; i < 3; i++) {
      const refused = await api.call('GET', '/me', { key: revoked.key });
      assert.deepEqual([refused.status, refused.body.code], [401, 'api_key_revoked']);
      assert.equal(refused.headers.get('ratelimit-limit'), null, 'no key, so no per-key budget');
    }
    assert.equal((await api.call('GET', '/me')).status, 200);
    const wrong = lines.filter((line) => JSON.parse(line).level >= 40);
    assert.deepEqual(wrong, []);
  });
});
