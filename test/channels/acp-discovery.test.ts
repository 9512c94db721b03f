// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertAcpDiscovery } from '../helpers/acp-schema.ts';
import { startTestRuntime } from '../helpers/runtime.ts';

describe('ACP discovery document', () => {
  it('serves /.well-known/acp.json publicly, cacheable for an hour, valid against the official schema', async (t) => {
    const { app } = await startTestRuntime(t, { env: { BASE_URL: 'https://svc.example.com' } });
    const response = await app.inject({ method: 'GET', url: '/.well-known/acp.json' });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^application\/json/);
    assert.equal(response.headers['cache-control'], 'public, max-age=3600');
    const body = response.json();
    assertAcpDiscovery(body);
    assert.deepEqual(body, {
      protocol: { name: 'acp', version: '2026-04-17', supported_versions: ['2026-04-17'] },
      api_base_url: 'https://svc.example.com/api/acp',
      transports: ['rest'],
      capabilities: { services: ['checkout'], supported_currencies: ['usd'] },
    });
  });
});
