// db-scope: sqlite

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { startServiceProcess } from '../helpers/service-process.ts';

const run = promisify(execFile);
const KEY = /svc_live_[0-9A-Za-z]{36}/;

describe('an operator manages API keys with the CLI (npm run svc -- api-keys ...)', () => {
  it('creates a key shown once, lists it without the secret, rotates and revokes it', async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-api-keys-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PSP_SANDBOX_PORT: '0' };
    const svc = async (...args: string[]) =>
      (await run(process.execPath, ['src/cli.ts', ...args], { env })).stdout;

    const workspace = JSON.parse(
      await svc('workspaces', 'create', '--email', 'owner@acme.example', '--plan', 'pro', '--name', 'Acme'),
    );
    await assert.rejects(
      svc('orders', 'show', workspace.currentTerm.orderId),
      (error: { code: number; stderr: string }) =>
        error.code === 1 && /names a term given with workspaces create, not a paid order/.test(error.stderr),
    );
    const created = await svc('api-keys', 'create', '--workspace', workspace.id, '--name', 'CI');
    const key = KEY.exec(created)?.[0] ?? assert.fail(created);
    const keyId = /key_[0-9a-z]{26}/.exec(created)?.[0] ?? assert.fail(created);
    assert.match(created, /only time the key is shown/);

    const service = await startServiceProcess({ DATA_DIR: dataDir, PSP_SANDBOX_PORT: '0' });
    t.after(() => service.stop('SIGKILL'));
    const me = (apiKey: string) =>
      fetch(`${service.url}/api/v1/me`, { headers: { authorization: `Bearer ${apiKey}` } });
    const answer = await me(key);
    assert.equal(answer.status, 200);
    const body = (await answer.json()) as { organization: unknown };
    assert.deepEqual(body.organization, { id: workspace.id, name: 'Acme' });

    const listed = await svc('api-keys', 'list', '--workspace', workspace.id);
    assert.match(listed, new RegExp(`${keyId}  ${key.slice(0, 13)}\\.\\.\\.${key.slice(-4)}  "CI"`));
    assert.doesNotMatch(listed, KEY);

    await assert.rejects(svc('api-keys', 'rotate', keyId, '--revoke-old-in', '91d'), /at most 90d/);
    await assert.rejects(svc('api-keys', 'rotate', keyId, '--revoke-old-in', 'soon'), /must look like/);
    const rotated = await svc('api-keys', 'rotate', keyId, '--revoke-old-in', '1h');
    const fresh = KEY.exec(rotated)?.[0] ?? assert.fail(rotated);
    assert.match(rotated, /old: .* stops working /);
    assert.deepEqual([(await me(key)).status, (await me(fresh)).status], [200, 200]);
    const freshId = /new: (key_[0-9a-z]{26})/.exec(rotated)?.[1] ?? assert.fail(rotated);
    await svc('api-keys', 'revoke', keyId);
    await svc('api-keys', 'revoke', freshId);
    // The CLI is another process: the service may remember a verified key for API_KEY_CACHE_MS
    // (5 s, docs/decisions.md), and not a moment longer.
    const revokedAt = performance.now();
    let statuses = [(await me(key)).status, (await me(fresh)).status];
    while (statuses.some((status) => status !== 401) && performance.now() - revokedAt < 6_000) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      statuses = [(await me(key)).status, (await me(fresh)).status];
    }
    assert.deepEqual(statuses, [401, 401]);

    await assert.rejects(svc('api-keys', 'revoke', 'key_unknown'), /no API key key_unknown/);
    assert.equal(await service.stop('SIGTERM'), 0);
  });
});
