import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';

describe('configuration', () => {
  it('runs on the embedded defaults with no configuration at all', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.baseUrl, 'http://localhost:3000');
    assert.equal(config.siteUrl, config.baseUrl);
    assert.deepEqual(config.database, { kind: 'sqlite', file: path.resolve('data/svc.sqlite') });
    assert.equal(config.psp.kind, 'sandbox');
    assert.equal(config.smtpUrl, undefined);
    assert.equal(config.idempotency.staleAfterMs, 30_000);
  });

  it('takes the idempotency takeover time from IDEMPOTENCY_STALE_AFTER_MS', () => {
    assert.equal(loadConfig({ IDEMPOTENCY_STALE_AFTER_MS: '5000' }).idempotency.staleAfterMs, 5000);
  });

  it('selects PostgreSQL from a postgres DATABASE_URL', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://app@db.internal:5432/svc' });
    assert.deepEqual(config.database, { kind: 'postgres', url: 'postgres://app@db.internal:5432/svc' });
  });

  const bad: [Record<string, string>, string][] = [
    [{ PORT: 'abc' }, 'PORT must be an integer from 0 to 65535 (got "abc").'],
    [{ PORT: '70000' }, 'PORT must be an integer from 0 to 65535'],
    [{ BASE_URL: 'not a url' }, 'BASE_URL must be an absolute http(s) URL'],
    [{ BASE_URL: 'ftp://example.com' }, 'BASE_URL must be an absolute http(s) URL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL must be a postgres:// URL or sqlite:<file>'],
    [{ NODE_ENV: 'staging' }, 'NODE_ENV must be one of development, production, test'],
    [{ SMTP_URL: 'mail.example.com' }, 'SMTP_URL must be an smtp:// or smtps:// URL'],
    [{ PSP_SECRET_KEY: 'hunter2' }, 'PSP_SECRET_KEY must be a secret key starting with sk_test_'],
    [
      { NODE_ENV: 'production', PSP_SECRET_KEY: 'sk_live_x', WEBHOOK_ALLOW_LOOPBACK: 'true' },
      'WEBHOOK_ALLOW_LOOPBACK must be unset or false in production',
    ],
    [{ WEBHOOK_ALLOW_LOOPBACK: 'yes' }, 'WEBHOOK_ALLOW_LOOPBACK must be one of true, false'],
    [
      { IDEMPOTENCY_STALE_AFTER_MS: '500' },
      'IDEMPOTENCY_STALE_AFTER_MS must be an integer from 1000 to 3600000',
    ],
    [
      { IDEMPOTENCY_STALE_AFTER_MS: '30s' },
      'IDEMPOTENCY_STALE_AFTER_MS must be an integer from 1000 to 3600000',
    ],
  ];
  for (const [env, message] of bad) {
    it(`rejects ${JSON.stringify(env)} naming the variable`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => error instanceof ConfigError && error.message.includes(message),
      );
    });
  }

  it('never echoes a secret value in the error', () => {
    assert.throws(
      () => loadConfig({ SMTP_URL: 'user:topsecret@mail' }),
      (error: unknown) => error instanceof ConfigError && !error.message.includes('topsecret'),
    );
  });

  it('stops the process with one clear line and a non-zero exit', () => {
    const result = spawnSync(process.execPath, ['src/main.ts'], {
      env: { PATH: process.env.PATH, PORT: 'eighty' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.notEqual(result.status, 0);
    assert.equal(
      result.stderr.trim(),
      'Configuration error: PORT must be an integer from 0 to 65535 (got "eighty").',
    );
  });
});
