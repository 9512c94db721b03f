import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { revokeApiKey } from '../../src/api/index.ts';
import { startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

describe(`every REST operation on ${testDialect}`, () => {
  it('answers 401 problem+json without a key, with a revoked one, and for a key sent in the query', async (t) => {
    const api = await startApiFixture(t);
    const revoked = await api.createOrganization('Former customer');
    await revokeApiKey(api.runtime.database.db, api.runtime.clock, revoked.keyId);
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
});
