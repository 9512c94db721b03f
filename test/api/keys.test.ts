// db-scope: both

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import {
  API_KEY_SCAN_PATTERN,
  createApiKey,
  isWellFormedApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
} from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { loggerOptions } from '../../src/http/logging.ts';
import { MINUTE_MS } from '../../src/shared/clock.ts';
import { sha256Hex } from '../../src/shared/ids.ts';
import { startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

describe(`API keys on ${testDialect}`, () => {
  it('look like svc_live_ keys, carry a checksum, and are recognisable by a scanner', async (t) => {
    const api = await startApiFixture(t);
    assert.match(api.org.key, /^svc_live_[0-9A-Za-z]{36}$/);
    assert.ok(isWellFormedApiKey(api.org.key));
    const typo = api.org.key.slice(0, 20) + (api.org.key[20] === 'a' ? 'b' : 'a') + api.org.key.slice(21);
    assert.equal(isWellFormedApiKey(typo), false, 'one changed character breaks the checksum');
    assert.deepEqual(`leaked: ${api.org.key}.`.match(API_KEY_SCAN_PATTERN), [api.org.key]);
  });

  it('are stored only as a SHA-256 hash with a display prefix and last four', async (t) => {
    const api = await startApiFixture(t);
    const rows = await api.runtime.database.db.selectFrom('api_keys').selectAll().execute();
    assert.equal(rows.length, 1);
    const [row] = rows;
    assert.equal(row?.key_hash, sha256Hex(api.org.key));
    assert.equal(row?.prefix, api.org.key.slice(0, 13));
    assert.equal(row?.last_four, api.org.key.slice(-4));
    assert.ok(!JSON.stringify(rows).includes(api.org.key), 'the key itself is nowhere in the table');
    const [listed] = await listApiKeys(api.runtime.database.db, api.org.workspaceId);
    assert.ok(!JSON.stringify(listed).includes(api.org.key));
  });

  it('authenticate with Authorization: Bearer or x-api-key', async (t) => {
    const api = await startApiFixture(t);
    const bearer = await api.call('GET', '/me');
    const header = await api.call('GET', '/me', { key: null, headers: { 'x-api-key': api.org.key } });
    assert.deepEqual([bearer.status, header.status], [200, 200]);
    assert.equal(header.body.organization.id, api.org.workspaceId);
  });

  it('answer 401 problem+json when missing, malformed, unknown or revoked, never echoing the key', async (t) => {
    const api = await startApiFixture(t);
    const { db } = api.runtime.database;
    const created = await createApiKey(
      db,
      api.runtime.clock,
      { workspaceId: api.org.workspaceId, name: 'x' },
      OPERATOR_SOURCE,
    );
    assert.ok(created.ok);
    const unknown = created.value.key;
    await db.deleteFrom('api_keys').where('key_hash', '=', sha256Hex(unknown)).execute();
    const revoked = await api.createOrganization('Revoked Inc');
    await revokeApiKey(db, api.runtime.clock, revoked.keyId, OPERATOR_SOURCE);

    const cases: [string, Record<string, string>, string][] = [
      ['missing', {}, 'api_key_missing'],
      ['empty bearer', { authorization: 'Bearer ' }, 'api_key_missing'],
      ['basic scheme', { authorization: `Basic ${api.org.key}` }, 'api_key_missing'],
      ['malformed', { authorization: 'Bearer svc_live_nope' }, 'api_key_invalid'],
      [
        'bad checksum',
        { authorization: `Bearer ${api.org.key.slice(0, -1)}${api.org.key.endsWith('A') ? 'B' : 'A'}` },
        'api_key_invalid',
      ],
      ['unknown', { authorization: `Bearer ${unknown}` }, 'api_key_invalid'],
      ['unknown x-api-key', { 'x-api-key': unknown }, 'api_key_invalid'],
      ['revoked', { authorization: `Bearer ${revoked.key}` }, 'api_key_revoked'],
    ];
    for (const [name, headers, code] of cases) {
      const response = await api.call('GET', '/tasks', { key: null, headers });
      assert.equal(response.status, 401, name);
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/, name);
      assert.equal(response.body.code, code, name);
      assert.equal(response.body.request_id, response.headers.get('request-id'), name);
      assert.equal(response.headers.get('www-authenticate'), 'Bearer realm="api"', name);
      for (const secret of [unknown, revoked.key]) assert.ok(!JSON.stringify(response.body).includes(secret));
    }
  });

  it('rotate: the new key works at once, the old one until the chosen time', async (t) => {
    const api = await startApiFixture(t);
    const { db } = api.runtime.database;
    const clock = api.runtime.clock;
    const rotated = await rotateApiKey(
      db,
      clock,
      api.org.keyId,
      OPERATOR_SOURCE,
      new Date(clock.now().getTime() + 10 * MINUTE_MS),
    );
    assert.ok(rotated.ok);
    const fresh = rotated.value.key;
    assert.notEqual(fresh, api.org.key);
    assert.equal(rotated.value.info.replacesKeyId, api.org.keyId);

    for (const key of [api.org.key, fresh]) assert.equal((await api.call('GET', '/me', { key })).status, 200);
    clock.advance(10 * MINUTE_MS);
    assert.equal((await api.call('GET', '/me', { key: api.org.key })).body.code, 'api_key_revoked');
    assert.equal((await api.call('GET', '/me', { key: fresh })).status, 200);

    const again = await rotateApiKey(db, clock, api.org.keyId, OPERATOR_SOURCE);
    assert.deepEqual(again, { ok: false, error: { code: 'revoked' } }, 'a revoked key cannot be rotated');
  });

  it('record last use without writing on every request', async (t) => {
    const api = await startApiFixture(t);
    const { db } = api.runtime.database;
    const lastUsed = async () =>
      (
        await db
          .selectFrom('api_keys')
          .select('last_used_at')
          .where('id', '=', api.org.keyId)
          .executeTakeFirst()
      )?.last_used_at;
    assert.equal(await lastUsed(), null);
    await api.call('GET', '/me');
    const first = await lastUsed();
    assert.equal(first, api.runtime.clock.now().getTime());

    api.runtime.clock.advance(30_000);
    await api.call('GET', '/me');
    assert.equal(await lastUsed(), first, 'within a minute the recorded time stays');
    api.runtime.clock.advance(31_000);
    await api.call('GET', '/me');
    assert.equal(await lastUsed(), api.runtime.clock.now().getTime());
  });

  it('never appear in the logs, whichever header carries them', async (t) => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const api = await startApiFixture(t, { logger: pino(loggerOptions('trace'), sink) });
    await api.call('GET', '/me');
    await api.call('GET', '/tasks', { key: null, headers: { 'x-api-key': api.org.key } });
    await api.call('GET', `/tasks?cursor=${api.org.key}`);
    await api.call('GET', '/nope', { key: null, headers: { 'x-api-key': api.org.key } });
    assert.ok(lines.length >= 4);
    for (const line of lines) assert.ok(!line.includes(api.org.key.slice(9)), line);
  });
});
