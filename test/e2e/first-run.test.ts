// db-scope: both

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { TEST_REDIS_URL } from '../helpers/redis.ts';
import { startServiceProcess } from '../helpers/service-process.ts';

describe('first run (npm start)', () => {
  it('serves /healthz on the embedded defaults, prints where everything is, and stops cleanly on SIGTERM', async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-first-run-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = { DATA_DIR: dataDir, PSP_SANDBOX_PORT: '0' };

    const first = await startServiceProcess(env);
    t.after(() => first.stop('SIGKILL'));
    const health = await fetch(`${first.url}/healthz`);
    assert.equal(health.status, 200);
    assert.equal((await fetch(`${first.url}/readyz`)).status, 200);
    const banner = first.output();
    assert.match(banner, /svc ready in \d+ ms/);
    assert.match(
      banner,
      new RegExp(`database +sqlite ${path.join(dataDir, 'svc.sqlite')} \\(applied 0001_foundation`),
    );
    assert.match(banner, /mail +dev mailbox at .*\/dev\/mailbox/);
    assert.match(banner, /REST API +http:\/\/\S+\/api\/v1\/docs/);
    assert.match(banner, /rate limits +counted in this process/);
    assert.equal((await fetch(`${first.url}/api/v1/openapi.json`)).status, 200);
    assert.equal(await first.stop('SIGTERM'), 0);

    const second = await startServiceProcess(env);
    t.after(() => second.stop('SIGKILL'));
    assert.doesNotMatch(second.output(), /applied/, 'a second start applies no migration');
    assert.equal((await fetch(`${second.url}/healthz`)).status, 200);
    assert.equal(await second.stop('SIGINT'), 0);
  });

  it('with REDIS_URL, says so and still stops cleanly on SIGTERM', {
    skip: !TEST_REDIS_URL && 'TEST_REDIS_URL is not set',
  }, async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-first-run-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const service = await startServiceProcess({
      DATA_DIR: dataDir,
      PSP_SANDBOX_PORT: '0',
      REDIS_URL: TEST_REDIS_URL ?? '',
      REDIS_KEY_PREFIX: `test:first-run:${process.pid}:`,
    });
    t.after(() => service.stop('SIGKILL'));
    assert.equal((await fetch(`${service.url}/healthz`)).status, 200);
    assert.match(service.output(), /rate limits +shared through redis:\/\//);
    assert.doesNotMatch(service.output(), /Redis unreachable/);
    assert.equal(await service.stop('SIGTERM'), 0);
  });
});
