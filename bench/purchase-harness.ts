import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { MPP_PREFIX } from '../src/channels/mpp/index.ts';
import { loadConfig } from '../src/config.ts';
import { type DatabaseHandle, openDatabase } from '../src/db/database.ts';
import { createDevMailboxTransport } from '../src/mail/index.ts';
import { createStripeAdapter } from '../src/psp/index.ts';
import { type RunningPspSandbox, startPspSandbox } from '../src/psp/sandbox/main.ts';
import { createRuntime, type Runtime } from '../src/runtime.ts';
import { systemClock } from '../src/shared/clock.ts';
import { PRODUCTION_ENV, productionLogger, report } from './harness.ts';
import type { PurchaseClientJob } from './purchase-client.ts';

const SANDBOX_KEY = 'sk_test_bench';
export const PURCHASES = Number(process.env.BENCH_PURCHASES ?? 2000);
export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);

export interface BenchService {
  runtime: Runtime;
  sandbox: RunningPspSandbox;
  /** The service's own address, listening on loopback. */
  url: string;
  /** Mints `count` shared payment tokens good for `maxAmount`. */
  mintTokens(count: number, maxAmount: number): Promise<string[]>;
}

/**
 * Runs `measure` against a fresh service on SQLite, then on PostgreSQL when one is reachable;
 * `env` overrides the service's configuration.
 */
export async function onBothDialects(
  name: string,
  measure: (service: BenchService) => Promise<Record<string, unknown>>,
  env: Record<string, string> = {},
) {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-'));
  try {
    await withService(
      openDatabase({ kind: 'sqlite', file: path.join(dir, 'bench.sqlite') }),
      async (service) => report(name, { dialect: 'sqlite', ...(await measure(service)) }),
      env,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const admin = openDatabase({ kind: 'postgres', url });
  try {
    await sql`create schema ${sql.id(schema)}`.execute(admin.db);
  } catch (error) {
    report(name, {
      dialect: 'postgres',
      skipped: `no PostgreSQL at BENCH_DATABASE_URL (${(error as Error).message})`,
    });
    await admin.close();
    return;
  }
  try {
    await withService(
      openDatabase({ kind: 'postgres', url }, { searchPath: schema }),
      async (service) => report(name, { dialect: 'postgres', ...(await measure(service)) }),
      env,
    );
  } finally {
    await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
    await admin.close();
  }
}

async function withService(
  database: DatabaseHandle,
  use: (service: BenchService) => Promise<void>,
  env: Record<string, string>,
): Promise<void> {
  const sandbox = await startPspSandbox({ secretKey: SANDBOX_KEY });
  const config = loadConfig({
    ...PRODUCTION_ENV,
    LOG_LEVEL: 'info',
    RATE_LIMIT_MAX: '1000000000',
    API_RATE_LIMIT_PER_IP: '1000000000',
    API_RATE_LIMIT_PER_KEY: '1000000000',
    ...env,
  });
  const runtime = await createRuntime(config, {
    logger: productionLogger(config.logLevel),
    database,
    mailTransport: createDevMailboxTransport(database.db, systemClock),
    paymentProvider: createStripeAdapter({
      secretKey: SANDBOX_KEY,
      webhookSecret: 'whsec_sandbox',
      apiBase: new URL(sandbox.url),
      apiVersion: config.psp.apiVersion,
    }),
  });
  try {
    const url = await runtime.app.listen({ host: '127.0.0.1', port: 0 });
    await use({
      runtime,
      sandbox,
      url,
      mintTokens: (count, maxAmount) => mintTokens(sandbox.url, count, maxAmount),
    });
  } finally {
    await runtime.close();
    await sandbox.close();
    await database.close();
  }
}

async function mintTokens(sandboxUrl: string, count: number, maxAmount: number): Promise<string[]> {
  const mintOne = async () => {
    const response = await fetch(`${sandboxUrl}/v1/test_helpers/shared_payment/granted_tokens`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${SANDBOX_KEY}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        payment_method: 'pm_card_visa',
        'usage_limits[currency]': 'usd',
        'usage_limits[max_amount]': String(maxAmount),
      }),
    });
    return ((await response.json()) as { id: string }).id;
  };
  const tokens: string[] = [];
  for (let i = 0; i < count; i += 100) {
    tokens.push(...(await Promise.all(Array.from({ length: Math.min(100, count - i) }, mintOne))));
  }
  return tokens;
}

/** Runs the purchases of bench/purchase-client.ts in a child process and answers its measurement. */
export function clientPurchases(job: Omit<PurchaseClientJob, 'mppPrefix'>): Promise<Record<string, unknown>> {
  const client = fileURLToPath(new URL('./purchase-client.ts', import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [client], { stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0
        ? resolve(JSON.parse(out) as Record<string, unknown>)
        : reject(new Error(`purchase client exited ${code}`)),
    );
    child.stdin.end(JSON.stringify({ ...job, mppPrefix: MPP_PREFIX }));
  });
}
