import { isIP } from 'node:net';
import path from 'node:path';

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string /* a path, or ':memory:' */ }
  | { kind: 'postgres'; url: string };

export type PspConfig =
  /** No key configured: `npm start` runs the project's PSP sandbox and the adapter talks to it. */
  { kind: 'sandbox'; secretKey: string; port: number } | { kind: 'remote'; secretKey: string; apiBase: URL };

export interface RedisConfig {
  url: string;
  /** Put before every key, so that several deployments can share one Redis. */
  keyPrefix: string;
  commandTimeoutMs: number;
}

/** The Redis URL as logs and the start banner may show it (no password). */
export function redactedRedisUrl(url: string): string {
  const shown = new URL(url);
  if (shown.password) shown.password = '***';
  return shown.href;
}

export interface S3StorageConfig {
  kind: 's3';
  bucket: string;
  region: string;
  /** An S3-compatible server (MinIO, Ceph, R2...); unset for AWS itself. */
  endpoint: string | undefined;
  forcePathStyle: boolean;
  /** Prepended to every object key, e.g. `evidence/`; empty by default. */
  prefix: string;
}

/** Where evidence files live (EVIDENCE_STORAGE); credentials for S3 come from the SDK's default chain. */
export type EvidenceStorageConfig = { kind: 'local'; root: string } | { kind: 'database' } | S3StorageConfig;

export interface Config {
  env: 'development' | 'production' | 'test';
  host: string;
  port: number;
  baseUrl: string;
  siteUrl: string;
  dataDir: string;
  database: DatabaseConfig;
  /** `webhookSecret` verifies the provider's signed events (PSP_WEBHOOK_SECRET; the sandbox signs with it too). */
  psp: PspConfig & { apiVersion: string; networkProfileId: string; webhookSecret: string };
  smtpUrl: string | undefined;
  mailFrom: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  bodyLimitBytes: number;
  jobPollIntervalMs: number;
  /** How long a claimed job is held before another worker may take it over (its worker died). */
  jobLeaseMs: number;
  /** How long an ACP/UCP request holds its Idempotency-Key before a retry may take it over. */
  idempotency: { staleAfterMs: number };
  /**
   * Instance heartbeats (INSTANCE_HEARTBEAT_MS) and how long a silent instance still counts as
   * alive (INSTANCE_GONE_AFTER_MS); the leases of one known gone are taken over at once.
   */
  instances: { heartbeatMs: number; goneAfterMs: number };
  /**
   * SIGNING_KEYS_SECRET: the private RFC 9421 signing keys are sealed under it in the database;
   * unset (development), they are stored unsealed.
   */
  signingKeysSecret: string | undefined;
  /**
   * ACP_ORDER_WEBHOOK_URL and ACP_ORDER_WEBHOOK_SECRET: the agent platform's order webhook
   * (merchant to agent, HMAC-signed); unset, ACP orders are followed by reading the session only.
   */
  acp: { orderWebhook: { url: string; secret: string } | undefined };
  /** UCP_REQUIRE_SIGNATURES: refuse unsigned UCP requests (401 signature_missing). */
  ucp: { requireSignatures: boolean };
  /** Requests per client IP and window on each public surface (checkout channels). */
  rateLimit: { max: number; windowMs: number };
  /**
   * The proxies (addresses and CIDRs) whose X-Forwarded-For is believed: the client IP is the
   * address the nearest of them saw. Empty: the address of the connection's peer.
   */
  trustedProxies: string[];
  /**
   * Rate limits counted in one Redis every instance shares; unset, each instance counts in process.
   * A count that takes longer than `commandTimeoutMs` is counted in process (docs/operations.md).
   */
  redis: RedisConfig | undefined;
  /** MPP challenge HMAC secret (generated once and kept in the database when unset) and realm. */
  mpp: { secret: string | undefined; realm: string };
  /**
   * The HMAC key of the order pages' links (ORDER_LINK_SECRET); unset, one generated once and kept
   * in the database, which then holds all a reader needs to open every order page.
   */
  orderLinkSecret: string | undefined;
  /** The workspace REST API: requests per window per client IP and per API key, evidence upload size. */
  /** `exportPageSize`: rows a list's CSV export reads per query. */
  api: { perIpMax: number; perKeyMax: number; evidenceMaxBytes: number; exportPageSize: number };
  /** Development only: webhook targets on loopback (http://127.0.0.1:...) are accepted. */
  webhooks: { allowLoopback: boolean };
  evidenceStorage: EvidenceStorageConfig;
}

/** A configuration problem, phrased as the one line an operator needs to fix it. */
export class ConfigError extends Error {
  constructor(variable: string, expected: string, got: string | undefined) {
    const shown = got === undefined ? 'it is not set' : `got ${JSON.stringify(truncate(got))}`;
    super(`Configuration error: ${variable} must be ${expected} (${shown}).`);
    this.name = 'ConfigError';
  }

  /** Several problems found together, reported as one error with a line for each. */
  static all(first: ConfigError, others: ConfigError[]): ConfigError {
    first.message = [first, ...others].map((error) => error.message).join('\n');
    return first;
  }
}

function truncate(value: string): string {
  return value.length > 60 ? `${value.slice(0, 57)}...` : value;
}

type Env = Record<string, string | undefined>;

function readInteger(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new ConfigError(name, `an integer from ${min} to ${max}`, raw);
  }
  return value;
}

function readHttpUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(name, 'an absolute http(s) URL such as https://example.com', raw);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(name, 'an absolute http(s) URL such as https://example.com', raw);
  }
  return url.href.replace(/\/$/, '');
}

function readChoice<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw)) {
    throw new ConfigError(name, `one of ${choices.join(', ')}`, raw);
  }
  return raw as T;
}

function readDatabase(env: Env, dataDir: string): DatabaseConfig {
  const raw = env.DATABASE_URL;
  if (raw === undefined || raw === '') return { kind: 'sqlite', file: path.join(dataDir, 'svc.sqlite') };
  if (/^postgres(ql)?:\/\//.test(raw)) {
    try {
      new URL(raw);
    } catch {
      throw new ConfigError('DATABASE_URL', 'a valid postgres:// URL or sqlite:<file>', raw);
    }
    return { kind: 'postgres', url: raw };
  }
  if (raw.startsWith('sqlite:') && raw.length > 'sqlite:'.length) {
    const file = raw.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    return { kind: 'sqlite', file: file === ':memory:' ? file : path.resolve(file) };
  }
  throw new ConfigError(
    'DATABASE_URL',
    'a postgres:// URL or sqlite:<file> (sqlite::memory: for tests)',
    raw,
  );
}

function readPsp(env: Env): PspConfig {
  const secretKey = env.PSP_SECRET_KEY;
  const sandboxPort = readInteger(env, 'PSP_SANDBOX_PORT', 12111, 0, 65535);
  if (secretKey === undefined || secretKey === '') {
    return { kind: 'sandbox', secretKey: 'sk_test_sandbox', port: sandboxPort };
  }
  if (!/^(sk|rk)_(test|live)_\S+$/.test(secretKey)) {
    throw new ConfigError(
      'PSP_SECRET_KEY',
      'a secret key starting with sk_test_, sk_live_, rk_test_ or rk_live_',
      '<redacted>',
    );
  }
  const apiBase = new URL(readHttpUrl(env, 'PSP_API_BASE', 'https://api.stripe.com'));
  return { kind: 'remote', secretKey, apiBase };
}

/**
 * Only the embedded sandbox may fall back on its public secret: with a key of a real provider
 * account, that secret would let anyone forge the events that fulfil purchases.
 */
function readWebhookSecret(env: Env, psp: PspConfig): string {
  const secret = env.PSP_WEBHOOK_SECRET;
  if ((secret === undefined || secret === '') && psp.kind === 'sandbox') return 'whsec_sandbox';
  if (secret === undefined || secret === '') {
    throw new ConfigError(
      'PSP_WEBHOOK_SECRET',
      "set with PSP_SECRET_KEY to the signing secret (whsec_...) of the provider's webhook endpoint for /psp/events",
      undefined,
    );
  }
  if (!/^whsec_\S+$/.test(secret)) {
    throw new ConfigError(
      'PSP_WEBHOOK_SECRET',
      'a webhook signing secret starting with whsec_',
      '<redacted>',
    );
  }
  return secret;
}

function readRedis(env: Env): RedisConfig | undefined {
  const raw = env.REDIS_URL;
  if (raw === undefined || raw === '') return undefined;
  const expected = 'a redis:// or rediss:// URL such as redis://cache.internal:6379';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError('REDIS_URL', expected, '<redacted>');
  }
  if ((url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.hostname === '') {
    throw new ConfigError('REDIS_URL', expected, '<redacted>');
  }
  const keyPrefix = env.REDIS_KEY_PREFIX ?? 'svc:';
  if (!/^[\x21-\x7e]{0,64}$/.test(keyPrefix)) {
    throw new ConfigError(
      'REDIS_KEY_PREFIX',
      'up to 64 printable ASCII characters without spaces',
      keyPrefix,
    );
  }
  return {
    url: raw,
    keyPrefix,
    commandTimeoutMs: readInteger(env, 'REDIS_TIMEOUT_MS', 250, 10, 10_000),
  };
}

const TRUST_PROXY_EXPECTED =
  'false, or the addresses or CIDRs of the proxies in front of the service separated by commas (10.0.0.5,10.1.0.0/16)';

/**
 * Only named proxies are believed. `true` (believe every peer) let any client choose its address
 * with a header of its own; a hop count believes whoever connects, so a client that reaches an
 * instance directly can do the same (Fastify 5 ignores a number for that reason).
 */
function readTrustedProxies(env: Env): string[] {
  const raw = env.TRUST_PROXY;
  if (raw === undefined || raw === '' || raw === 'false') return [];
  if (raw === 'true') {
    throw new ConfigError(
      'TRUST_PROXY',
      `${TRUST_PROXY_EXPECTED}; true would believe any X-Forwarded-For a client writes`,
      raw,
    );
  }
  if (/^\d+$/.test(raw)) {
    throw new ConfigError(
      'TRUST_PROXY',
      `${TRUST_PROXY_EXPECTED}; a hop count cannot tell a proxy from a client that connects directly`,
      raw,
    );
  }
  const proxies = raw.split(',').map((entry) => entry.trim());
  const invalid = proxies.find((entry) => !isAddressOrCidr(entry));
  if (invalid !== undefined) throw new ConfigError('TRUST_PROXY', TRUST_PROXY_EXPECTED, invalid);
  return proxies;
}

/** `10.0.0.5`, `10.1.0.0/16`, `fd00::/8`; a prefix of 0 would be every address. */
function isAddressOrCidr(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  const bits = Number(prefix);
  return /^\d{1,3}$/.test(prefix) && bits >= 1 && bits <= (version === 4 ? 32 : 128);
}

/** A secret every instance shares: at least 32 bytes, or undefined to use one generated into the database. */
function readSharedSecret(env: Env, name: string): string | undefined {
  const secret = env[name];
  if (secret === undefined || secret === '') return undefined;
  if (Buffer.byteLength(secret, 'utf8') < 32) {
    throw new ConfigError(
      name,
      'at least 32 bytes, e.g. the output of openssl rand -base64 32',
      '<redacted>',
    );
  }
  return secret;
}

/**
 * What production may not fall back on: each default is for a developer's machine (the PSP
 * sandbox, the dev mailbox, localhost links, a secret generated into the database).
 */
const REQUIRED_IN_PRODUCTION: Record<string, string> = {
  PSP_SECRET_KEY: "set in production to the payment provider's secret key, or payments go to the PSP sandbox",
  SMTP_URL: 'set in production to an smtp:// or smtps:// URL, or email stays in the dev mailbox',
  BASE_URL: "set in production to the service's public URL, or links point to localhost",
  MPP_SECRET:
    'set in production to at least 32 random bytes shared by every instance (openssl rand -base64 32)',
  ORDER_LINK_SECRET:
    'set in production to at least 32 random bytes shared by every instance (openssl rand -base64 32), so the database alone opens no order page',
  PSP_WEBHOOK_SECRET:
    "set in production to the signing secret (whsec_...) of the provider's webhook endpoint for /psp/events",
};

function refuseDevelopmentDefaultsInProduction(env: Env, nodeEnv: Config['env']): void {
  if (nodeEnv !== 'production') return;
  const [first, ...others] = Object.entries(REQUIRED_IN_PRODUCTION)
    .filter(([variable]) => !env[variable])
    .map(([variable, expected]) => new ConfigError(variable, expected, undefined));
  if (first) throw ConfigError.all(first, others);
}

/**
 * Reads and validates the whole configuration; throws ConfigError on the first bad value, or on
 * every missing production setting at once.
 */
export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = readChoice(env, 'NODE_ENV', ['development', 'production', 'test'], 'development');
  refuseDevelopmentDefaultsInProduction(env, nodeEnv);
  const port = readInteger(env, 'PORT', 3000, 0, 65535);
  const dataDir = path.resolve(env.DATA_DIR || 'data');
  const baseUrl = readHttpUrl(env, 'BASE_URL', `http://localhost:${port}`);
  const smtpUrl = env.SMTP_URL || undefined;
  if (smtpUrl !== undefined && !/^smtps?:\/\/[^/]+/.test(smtpUrl)) {
    throw new ConfigError(
      'SMTP_URL',
      'an smtp:// or smtps:// URL such as smtp://user:pass@mail.example.com:587',
      '<redacted>',
    );
  }
  const psp = readPsp(env);
  const networkProfileId = env.PSP_NETWORK_PROFILE_ID || 'profile_test_sandbox';
  if (!/^profile_[A-Za-z0-9_]+$/.test(networkProfileId)) {
    throw new ConfigError(
      'PSP_NETWORK_PROFILE_ID',
      'a PSP network profile id such as profile_test_61U92',
      networkProfileId,
    );
  }
  return {
    env: nodeEnv,
    host: env.HOST || 'localhost',
    port,
    baseUrl,
    siteUrl: readHttpUrl(env, 'SITE_URL', baseUrl),
    dataDir,
    database: readDatabase(env, dataDir),
    psp: {
      ...psp,
      apiVersion: env.PSP_API_VERSION || '2026-07-29.preview',
      networkProfileId,
      webhookSecret: readWebhookSecret(env, psp),
    },
    smtpUrl,
    mailFrom: env.MAIL_FROM || 'Svc Workspaces <no-reply@localhost>',
    logLevel: readChoice(
      env,
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'],
      'info',
    ),
    bodyLimitBytes: readInteger(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 100 * 1_048_576),
    jobPollIntervalMs: readInteger(env, 'JOB_POLL_INTERVAL_MS', 1000, 10, 60_000),
    jobLeaseMs: readInteger(env, 'JOB_LEASE_MS', 5 * 60_000, 10_000, 3_600_000),
    instances: instanceSettings(env),
    signingKeysSecret: readSharedSecret(env, 'SIGNING_KEYS_SECRET'),
    acp: { orderWebhook: readAcpOrderWebhook(env) },
    ucp: {
      requireSignatures: readChoice(env, 'UCP_REQUIRE_SIGNATURES', ['true', 'false'], 'false') === 'true',
    },
    idempotency: {
      // 30 s: far above a normal request (well under a second), and below the purchase pipeline's
      // 90 s charge lease, which keeps a retry that takes over from charging while a slow first
      // request still waits on the provider (the same attempt's provider key makes it one charge).
      staleAfterMs: readInteger(env, 'IDEMPOTENCY_STALE_AFTER_MS', 30_000, 1000, 3_600_000),
    },
    rateLimit: {
      max: readInteger(env, 'RATE_LIMIT_MAX', 300, 1, 1_000_000_000),
      windowMs: readInteger(env, 'RATE_LIMIT_WINDOW_MS', 60_000, 1000, 3_600_000),
    },
    trustedProxies: readTrustedProxies(env),
    redis: readRedis(env),
    orderLinkSecret: readSharedSecret(env, 'ORDER_LINK_SECRET'),
    mpp: { secret: readSharedSecret(env, 'MPP_SECRET'), realm: env.MPP_REALM || new URL(baseUrl).hostname },
    api: {
      perIpMax: readInteger(env, 'API_RATE_LIMIT_PER_IP', 1200, 1, 1_000_000_000),
      perKeyMax: readInteger(env, 'API_RATE_LIMIT_PER_KEY', 1200, 1, 1_000_000_000),
      evidenceMaxBytes: readInteger(env, 'EVIDENCE_MAX_BYTES', 25 * 1_048_576, 1024, 1024 * 1_048_576),
      exportPageSize: readInteger(env, 'API_EXPORT_PAGE_SIZE', 500, 1, 10_000),
    },
    webhooks: { allowLoopback: readWebhookLoopback(env, nodeEnv) },
    evidenceStorage: readEvidenceStorage(env, dataDir),
  };
}

function readEvidenceStorage(env: Env, dataDir: string): EvidenceStorageConfig {
  const kind = readChoice(env, 'EVIDENCE_STORAGE', ['local', 'database', 's3'], 'local');
  if (kind === 'local') return { kind, root: path.join(dataDir, 'evidence') };
  if (kind === 'database') return { kind };
  const bucket = env.S3_BUCKET ?? '';
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new ConfigError('S3_BUCKET', 'set to a bucket name when EVIDENCE_STORAGE=s3', env.S3_BUCKET);
  }
  const region = env.S3_REGION || env.AWS_REGION || 'us-east-1';
  if (!/^[a-z0-9-]{2,40}$/.test(region))
    throw new ConfigError('S3_REGION', 'a region such as eu-west-1', region);
  const prefix = env.S3_PREFIX ?? '';
  if (!/^([A-Za-z0-9_.-]+\/)*$/.test(prefix)) {
    throw new ConfigError('S3_PREFIX', 'empty or folder names each ending in / (evidence/)', prefix);
  }
  return {
    kind,
    bucket,
    region,
    endpoint: env.S3_ENDPOINT ? readHttpUrl(env, 'S3_ENDPOINT', '') : undefined,
    forcePathStyle: readChoice(env, 'S3_FORCE_PATH_STYLE', ['true', 'false'], 'false') === 'true',
    prefix,
  };
}

function readWebhookLoopback(env: Env, nodeEnv: Config['env']): boolean {
  const allowed = readChoice(env, 'WEBHOOK_ALLOW_LOOPBACK', ['true', 'false'], 'false') === 'true';
  if (allowed && nodeEnv === 'production') {
    throw new ConfigError('WEBHOOK_ALLOW_LOOPBACK', 'unset or false in production', 'true');
  }
  return allowed;
}

function instanceSettings(env: Env): Config['instances'] {
  const heartbeatMs = readInteger(env, 'INSTANCE_HEARTBEAT_MS', 1000, 100, 60_000);
  const goneAfterMs = readInteger(env, 'INSTANCE_GONE_AFTER_MS', 3000, 300, 600_000);
  if (goneAfterMs < 2 * heartbeatMs) {
    // One late heartbeat must not make a live instance look gone.
    throw new ConfigError(
      'INSTANCE_GONE_AFTER_MS',
      `at least twice INSTANCE_HEARTBEAT_MS (${heartbeatMs})`,
      String(goneAfterMs),
    );
  }
  return { heartbeatMs, goneAfterMs };
}

function readAcpOrderWebhook(env: Env): Config['acp']['orderWebhook'] {
  const url = env.ACP_ORDER_WEBHOOK_URL;
  const secret = env.ACP_ORDER_WEBHOOK_SECRET;
  if (!url && !secret) return undefined;
  if (!url) throw new ConfigError('ACP_ORDER_WEBHOOK_URL', 'set together with ACP_ORDER_WEBHOOK_SECRET', url);
  if (!secret) {
    throw new ConfigError('ACP_ORDER_WEBHOOK_SECRET', 'set together with ACP_ORDER_WEBHOOK_URL', undefined);
  }
  return { url: readHttpUrl(env, 'ACP_ORDER_WEBHOOK_URL', url), secret };
}
