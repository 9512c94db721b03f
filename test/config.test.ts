// db-scope: both

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig, redactedRedisUrl } from '../src/config.ts';
import { occupyPort } from './helpers/ports.ts';

/** Everything production may not take a development default for. */
const PRODUCTION = {
  NODE_ENV: 'production',
  PSP_SECRET_KEY: 'sk_live_x',
  SMTP_URL: 'smtp://mailer:secret@mail.example.com:587',
  BASE_URL: 'https://svc.example.com',
  MPP_SECRET: 'an-mpp-secret-of-at-least-32-bytes!',
  ORDER_LINK_SECRET: 'an-order-link-secret-of-32-bytes-or-more',
  PSP_WEBHOOK_SECRET: 'whsec_production',
};

describe('configuration', () => {
  it('runs on the embedded defaults with no configuration at all', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.baseUrl, 'http://localhost:3000');
    assert.equal(config.siteUrl, config.baseUrl);
    assert.deepEqual(config.database, { kind: 'sqlite', file: path.resolve('data/svc.sqlite') });
    assert.equal(config.psp.kind, 'sandbox');
    assert.equal(config.psp.webhookSecret, 'whsec_sandbox');
    assert.equal(config.smtpUrl, undefined);
    assert.equal(config.idempotency.staleAfterMs, 30_000);
  });

  it('takes the idempotency takeover time from IDEMPOTENCY_STALE_AFTER_MS', () => {
    assert.equal(loadConfig({ IDEMPOTENCY_STALE_AFTER_MS: '5000' }).idempotency.staleAfterMs, 5000);
  });

  it('holds a claimed job five minutes unless JOB_LEASE_MS says otherwise', () => {
    assert.equal(loadConfig({}).jobLeaseMs, 300_000);
    assert.equal(loadConfig({ JOB_LEASE_MS: '30000' }).jobLeaseMs, 30_000);
  });

  it('keeps evidence under DATA_DIR unless EVIDENCE_STORAGE names the database or an S3 bucket', () => {
    assert.deepEqual(loadConfig({ DATA_DIR: '/srv/svc' }).evidenceStorage, {
      kind: 'local',
      root: '/srv/svc/evidence',
    });
    assert.deepEqual(loadConfig({ EVIDENCE_STORAGE: 'database' }).evidenceStorage, { kind: 'database' });
    assert.deepEqual(
      loadConfig({
        EVIDENCE_STORAGE: 's3',
        S3_BUCKET: 'acme-evidence',
        S3_REGION: 'eu-west-1',
        S3_ENDPOINT: 'http://127.0.0.1:9000/',
        S3_FORCE_PATH_STYLE: 'true',
        S3_PREFIX: 'svc/evidence/',
      }).evidenceStorage,
      {
        kind: 's3',
        bucket: 'acme-evidence',
        region: 'eu-west-1',
        endpoint: 'http://127.0.0.1:9000',
        forcePathStyle: true,
        prefix: 'svc/evidence/',
      },
    );
  });

  it('selects PostgreSQL from a postgres DATABASE_URL', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://app@db.internal:5432/svc' });
    assert.deepEqual(config.database, { kind: 'postgres', url: 'postgres://app@db.internal:5432/svc' });
  });

  it('believes X-Forwarded-For only from the proxies TRUST_PROXY names', () => {
    assert.deepEqual(loadConfig({}).trustedProxies, []);
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'false' }).trustedProxies, []);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,fd00::/8,::1' }).trustedProxies, [
      '127.0.0.1',
      '10.0.0.0/8',
      'fd00::/8',
      '::1',
    ]);
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
      { PSP_WEBHOOK_SECRET: 'hunter2' },
      'PSP_WEBHOOK_SECRET must be a webhook signing secret starting with whsec_',
    ],
    [
      { PSP_SECRET_KEY: 'sk_test_real_account' },
      "PSP_WEBHOOK_SECRET must be set with PSP_SECRET_KEY to the signing secret (whsec_...) of the provider's webhook endpoint",
    ],
    [
      { NODE_ENV: 'test', PSP_SECRET_KEY: 'rk_live_x', PSP_API_BASE: 'https://psp.example.com' },
      'PSP_WEBHOOK_SECRET must be set with PSP_SECRET_KEY',
    ],
    [
      { ...PRODUCTION, WEBHOOK_ALLOW_LOOPBACK: 'true' },
      'WEBHOOK_ALLOW_LOOPBACK must be unset or false in production',
    ],
    [{ WEBHOOK_ALLOW_LOOPBACK: 'yes' }, 'WEBHOOK_ALLOW_LOOPBACK must be one of true, false'],
    [{ REDIS_URL: 'cache.internal:6379' }, 'REDIS_URL must be a redis:// or rediss:// URL'],
    [{ REDIS_URL: 'http://cache.internal' }, 'REDIS_URL must be a redis:// or rediss:// URL'],
    [
      { REDIS_URL: 'redis://x', REDIS_TIMEOUT_MS: '5' },
      'REDIS_TIMEOUT_MS must be an integer from 10 to 10000',
    ],
    [{ REDIS_URL: 'redis://x', REDIS_KEY_PREFIX: 'my app:' }, 'REDIS_KEY_PREFIX must be up to 64 printable'],
    [
      { IDEMPOTENCY_STALE_AFTER_MS: '500' },
      'IDEMPOTENCY_STALE_AFTER_MS must be an integer from 1000 to 3600000',
    ],
    [{ JOB_LEASE_MS: '5000' }, 'JOB_LEASE_MS must be an integer from 10000 to 3600000'],
    [{ EVIDENCE_STORAGE: 'disk' }, 'EVIDENCE_STORAGE must be one of local, database, s3'],
    [{ EVIDENCE_STORAGE: 's3' }, 'S3_BUCKET must be set to a bucket name when EVIDENCE_STORAGE=s3'],
    [{ EVIDENCE_STORAGE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'ftp://x' }, 'S3_BUCKET must be'],
    [
      { EVIDENCE_STORAGE: 's3', S3_BUCKET: 'evidence', S3_ENDPOINT: 'minio:9000' },
      'S3_ENDPOINT must be an absolute http(s) URL',
    ],
    [
      { EVIDENCE_STORAGE: 's3', S3_BUCKET: 'evidence', S3_FORCE_PATH_STYLE: 'yes' },
      'S3_FORCE_PATH_STYLE must be one of true, false',
    ],
    [
      { TRUST_PROXY: 'true' },
      'TRUST_PROXY must be false, or the addresses or CIDRs of the proxies in front of the service separated by commas (10.0.0.5,10.1.0.0/16); true would believe any X-Forwarded-For a client writes (got "true").',
    ],
    [
      { TRUST_PROXY: '1' },
      'TRUST_PROXY must be false, or the addresses or CIDRs of the proxies in front of the service separated by commas (10.0.0.5,10.1.0.0/16); a hop count cannot tell a proxy from a client that connects directly (got "1").',
    ],
    [
      { TRUST_PROXY: '10.0.0.5,lb.internal' },
      'TRUST_PROXY must be false, or the addresses or CIDRs of the proxies in front of the service separated by commas (10.0.0.5,10.1.0.0/16) (got "lb.internal").',
    ],
    [{ TRUST_PROXY: '10.0.0.0/33' }, 'TRUST_PROXY must be false, or the addresses or CIDRs'],
    [{ TRUST_PROXY: 'fd00::/129' }, 'TRUST_PROXY must be false, or the addresses or CIDRs'],
    [{ TRUST_PROXY: '0.0.0.0/0' }, 'TRUST_PROXY must be false, or the addresses or CIDRs'],
    [{ TRUST_PROXY: '10.0.0.0/8/8' }, 'TRUST_PROXY must be false, or the addresses or CIDRs'],
    [{ TRUST_PROXY: '127.0.0.1,' }, 'TRUST_PROXY must be false, or the addresses or CIDRs'],
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

  it('runs in production once the provider key, SMTP, the public URL and the shared secrets are set', () => {
    const config = loadConfig(PRODUCTION);
    assert.equal(config.psp.kind, 'remote');
    assert.equal(config.smtpUrl, PRODUCTION.SMTP_URL);
    assert.equal(config.baseUrl, PRODUCTION.BASE_URL);
    assert.equal(config.mpp.secret, PRODUCTION.MPP_SECRET);
    assert.equal(config.orderLinkSecret, PRODUCTION.ORDER_LINK_SECRET);
    assert.equal(config.psp.webhookSecret, PRODUCTION.PSP_WEBHOOK_SECRET);
  });

  it('refuses production without them, one line for each missing variable', () => {
    assert.throws(
      () => loadConfig({ NODE_ENV: 'production' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.message.split('\n'), [
          "Configuration error: PSP_SECRET_KEY must be set in production to the payment provider's secret key, or payments go to the PSP sandbox (it is not set).",
          'Configuration error: SMTP_URL must be set in production to an smtp:// or smtps:// URL, or email stays in the dev mailbox (it is not set).',
          "Configuration error: BASE_URL must be set in production to the service's public URL, or links point to localhost (it is not set).",
          'Configuration error: MPP_SECRET must be set in production to at least 32 random bytes shared by every instance (openssl rand -base64 32) (it is not set).',
          'Configuration error: ORDER_LINK_SECRET must be set in production to at least 32 random bytes shared by every instance (openssl rand -base64 32), so the database alone opens no order page (it is not set).',
          "Configuration error: PSP_WEBHOOK_SECRET must be set in production to the signing secret (whsec_...) of the provider's webhook endpoint for /psp/events (it is not set).",
        ]);
        return true;
      },
    );
    for (const variable of [
      'PSP_SECRET_KEY',
      'SMTP_URL',
      'BASE_URL',
      'MPP_SECRET',
      'ORDER_LINK_SECRET',
      'PSP_WEBHOOK_SECRET',
    ] as const) {
      assert.throws(
        () => loadConfig({ ...PRODUCTION, [variable]: '' }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.startsWith(`Configuration error: ${variable} must be set in production`) &&
          !error.message.includes('\n'),
        `production without ${variable}`,
      );
    }
  });

  it('counts rate limits in process unless REDIS_URL names a Redis', () => {
    assert.equal(loadConfig({}).redis, undefined);
    assert.deepEqual(loadConfig({ REDIS_URL: 'rediss://:pw@cache.internal:6380/2' }).redis, {
      url: 'rediss://:pw@cache.internal:6380/2',
      keyPrefix: 'svc:',
      commandTimeoutMs: 250,
    });
    assert.equal(
      redactedRedisUrl('redis://app:pw@cache.internal:6379'),
      'redis://app:***@cache.internal:6379',
    );
  });

  it('never echoes a secret value in the error', () => {
    assert.throws(
      () => loadConfig({ REDIS_URL: 'redis//:topsecret@cache' }),
      (error: unknown) => error instanceof ConfigError && !error.message.includes('topsecret'),
    );
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

  it('stops the process with every missing production variable, one line each, exit 78', (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-production-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const result = spawnSync(process.execPath, ['src/main.ts'], {
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'production',
        BASE_URL: 'https://svc.example.com',
        DATA_DIR: dataDir,
        PORT: '0',
        PSP_SANDBOX_PORT: '0',
      },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(result.status, 78);
    assert.deepEqual(
      result.stderr
        .trim()
        .split('\n')
        .map((line) => line.replace(/ must .*/, '')),
      ['PSP_SECRET_KEY', 'SMTP_URL', 'MPP_SECRET', 'ORDER_LINK_SECRET', 'PSP_WEBHOOK_SECRET'].map(
        (variable) => `Configuration error: ${variable}`,
      ),
    );
  });

  for (const [what, variable, message] of [
    [
      'service',
      'PORT',
      (port: number) => `port ${port} on 127.0.0.1 is already in use; set PORT to another port`,
    ],
    [
      'PSP sandbox',
      'PSP_SANDBOX_PORT',
      (port: number) =>
        `PSP sandbox port ${port} on 127.0.0.1 is already in use; set PSP_SANDBOX_PORT to another port`,
    ],
  ] as const) {
    it(`stops the process with one clear line when the ${what} port is taken`, async (t) => {
      const taken = await occupyPort();
      t.after(() => taken.close());
      const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-port-taken-'));
      t.after(() => rmSync(dataDir, { recursive: true, force: true }));
      const result = await runToExit({
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: '0',
        PSP_SANDBOX_PORT: '0',
        LOG_LEVEL: 'warn',
        [variable]: String(taken.port),
      });
      assert.equal(result.code, 78);
      assert.equal(result.stderr.trim(), message(taken.port));
      assert.doesNotMatch(result.stdout, /svc ready/);
    });
  }
});

/** Runs the service to its exit (asynchronously, so this process keeps holding the taken port). */
function runToExit(
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['src/main.ts'], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 20_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}
