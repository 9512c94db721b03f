// db-scope: both

import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { revokeApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { encodeCursor } from '../../src/db/cursor.ts';
import { loggerOptions } from '../../src/http/logging.ts';
import { startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

describe(`every REST operation on ${testDialect}`, () => {
  it('answers 401 problem+json without a key, with a revoked one, and for a key sent in the query', async (t) => {
    const api = await startApiFixture(t);
    const revoked = await api.createOrganization('Former customer');
    await revokeApiKey(api.runtime.database.db, api.runtime.clock, revoked.keyId, OPERATOR_SOURCE);
    const { body: document } = await api.call('GET', '/openapi.json', { key: null });

    let checked = 0;
    for (const [path, item] of Object.entries(
      document.paths as Record<string, Record<string, { security?: [] }>>,
    )) {
      for (const [method, operation] of Object.entries(item)) {
        if (operation.security?.length === 0) continue;
        const concrete = path.replace('/api/v1', '').replace(/\{\w+\}/g, 'tsk_06f1k2m3n4p5q6r7s8t9v0w1x2');
        for (const [key, code] of [
          [null, 'api_key_missing'],
          [revoked.key, 'api_key_revoked'],
        ] as const) {
          const response = await api.call(method.toUpperCase(), `${concrete}?api_key=${api.org.key}`, {
            key,
            json: method === 'get' || method === 'delete' ? undefined : {},
          });
          assert.equal(response.status, 401, `${method} ${path}`);
          assert.equal(response.body.code, code, `${method} ${path}`);
        }
        checked++;
      }
    }
    assert.ok(checked >= 14, `checked ${checked} operations`);
  });

  it('refuses another organization\u2019s records with 404, not 403', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other Org');
    const task = await api.call('POST', '/tasks', { json: { title: 'Mine' } });
    const control = (await api.call('GET', '/controls?limit=1')).body.data[0];
    for (const path of [`/tasks/${task.body.id}`, `/controls/${control.id}`]) {
      const response = await api.call('GET', path, { key: other.key });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], path);
    }
  });

  it('answers forged cursors with 400 invalid_cursor, whatever position they carry, and logs no error', async (t) => {
    const logs: { level: number; msg: string }[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).trim().split('\n')) logs.push(JSON.parse(line));
        done();
      },
    });
    const api = await startApiFixture(t, { logger: pino(loggerOptions('info'), sink) });
    await api.call('POST', '/tasks', { json: { title: 'One' } });
    await api.call('POST', '/evidence', { json: { title: 'Two', url: 'https://evidence.example/2' } });
    const forged = (list: string, position: unknown[]) =>
      encodeURIComponent(
        encodeCursor(position as (string | number)[], { workspaceId: api.org.workspaceId, list, filter: {} }),
      );
    const cases: [string, unknown[]][] = [
      ['tasks', []],
      ['tasks', ['tsk_1', 'tsk_2']],
      ['tasks', [42]],
      ['tasks', ['tsk_\u0000']],
      ['tasks', ['tsk_\ud800']],
      ['evidence', ['evd_1']],
      ['evidence', ['1767225600000', 'evd_1']],
      ['evidence', [1e300, 'evd_1']],
      ['evidence', [1.5, 'evd_1']],
      ['evidence', [1767225600000, 7]],
      ['risks', [25, 'r'.repeat(200)]],
      ['controls', [null, 'ctl_1']],
      // Integers that are safe in JavaScript but past the 32-bit integer columns of PostgreSQL.
      ['risks', [2 ** 31, 'rsk_1']],
      ['risks', [-(2 ** 31) - 1, 'rsk_1']],
      ['controls', [Number.MAX_SAFE_INTEGER, 'ctl_1']],
      ['evidence', [2 ** 53, 'evd_1']],
    ];
    for (const [list, position] of cases) {
      const response = await api.call('GET', `/${list}?cursor=${forged(list, position)}`);
      assert.deepEqual(
        [response.status, response.body.code],
        [400, 'invalid_cursor'],
        `${list} ${JSON.stringify(position)}`,
      );
    }
    for (const list of ['controls', 'tasks', 'evidence', 'risks']) {
      const response = await api.call('GET', `/${list}?cursor=garbage`);
      assert.deepEqual([response.status, response.body.code], [400, 'invalid_cursor'], list);
    }
    assert.deepEqual(
      logs.filter((line) => line.level >= 50).map((line) => line.msg),
      [],
      'a refused cursor is the client\u2019s mistake, not an error of the service',
    );
    const genuine = await api.call(
      'GET',
      `/evidence?cursor=${forged('evidence', [Date.now() + 60_000, 'evd_z'])}`,
    );
    assert.deepEqual([genuine.status, genuine.body.data.length], [200, 1]);
    const edgeOfRange = await api.call('GET', `/risks?cursor=${forged('risks', [2 ** 31 - 1, 'rsk_z'])}`);
    assert.equal(edgeOfRange.status, 200, JSON.stringify(edgeOfRange.body));
  });

  it('refuses NUL characters in bodies, searches and ids, and ids over 64 characters, with 400', async (t) => {
    const api = await startApiFixture(t);
    const requests: [string, string, unknown, string][] = [
      ['POST', '/tasks', { title: 'Review\u0000' }, 'body/title'],
      [
        'POST',
        '/risks',
        { title: 'Data loss', description: '\u0000', likelihood: 2, impact: 3 },
        'body/description',
      ],
      ['POST', '/people', { email: 'ana@example.com', name: 'Ana\u0000' }, 'body/name'],
      ['GET', '/controls?q=%00', undefined, 'querystring/q'],
      ['GET', '/evidence?control_id=ctl_%00', undefined, 'querystring/control_id'],
      ['GET', '/tasks/tsk_%00', undefined, 'params/id'],
      ['DELETE', '/vendors/vnd_%00', undefined, 'params/id'],
      ['GET', `/risks/rsk_${'x'.repeat(61)}`, undefined, 'params/id'],
      ['PATCH', `/policies/${'p'.repeat(65)}`, { title: 'Too long an id' }, 'params/id'],
    ];
    for (const [method, path, json, field] of requests) {
      const response = await api.call(method, path, { json });
      assert.deepEqual(
        [response.status, response.body.code, response.body.errors?.[0]?.path],
        [400, 'invalid_request', field],
        `${method} ${path}`,
      );
    }
  });

  it('reads a leap second in ?since= as the next minute', async (t) => {
    const api = await startApiFixture(t);
    await api.call('POST', '/evidence', {
      json: { title: 'Log export', url: 'https://evidence.example/log' },
    });
    const before = await api.call('GET', '/evidence?since=2016-12-31T23:59:60Z');
    assert.deepEqual([before.status, before.body.data.length], [200, 1]);
    const after = await api.call('GET', '/evidence?since=9998-12-31T23:59:60Z');
    assert.deepEqual([after.status, after.body.data.length], [200, 0]);
  });

  it('refuses JSON with numbers past double range or nested past 64 levels as invalid_json', async (t) => {
    const api = await startApiFixture(t);
    for (const body of ['{"title":"t","due_date":1e400}', `{"title":${'['.repeat(65)}${']'.repeat(65)}}`]) {
      const response = await fetch(`${api.url}/api/v1/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${api.org.key}`, 'content-type': 'application/json' },
        body,
      });
      assert.equal(response.status, 400, body.slice(0, 40));
      assert.equal(((await response.json()) as { code: string }).code, 'invalid_json');
    }
  });
});
