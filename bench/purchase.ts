import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.ts';
import { type DatabaseHandle, openDatabase } from '../src/db/database.ts';
import { createStripeAdapter } from '../src/psp/index.ts';
import { startPspSandbox } from '../src/psp/sandbox/main.ts';
import { purchase } from '../src/purchase/index.ts';
import { createRuntime } from '../src/runtime.ts';
import { report } from './harness.ts';

const KEY = 'sk_test_bench';
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);
const PURCHASES = Number(process.env.BENCH_PURCHASES ?? 2000);

async function mint(sandboxUrl: string): Promise<string> {
  const response = await fetch(`${sandboxUrl}/v1/test_helpers/shared_payment/granted_tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      payment_method: 'pm_card_visa',
      'usage_limits[currency]': 'usd',
      'usage_limits[max_amount]': '29900',
    }),
  });
  return ((await response.json()) as { id: string }).id;
}

function percentile(sorted: number[], p: number): number {
  return Math.round((sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0) * 10) / 10;
}

/** Purchases through the pipeline (record, charge via the SDK over HTTP, provision) with the sandbox. */
async function run(dialect: string, database: DatabaseHandle): Promise<void> {
  const sandbox = await startPspSandbox({ secretKey: KEY });
  const runtime = await createRuntime(loadConfig({ NODE_ENV: 'production', LOG_LEVEL: 'silent' }), {
    database,
    paymentProvider: createStripeAdapter({
      secretKey: KEY,
      apiBase: new URL(sandbox.url),
      apiVersion: '2026-07-29.preview',
    }),
  });
  try {
    const tokens = await Promise.all(Array.from({ length: PURCHASES }, () => mint(sandbox.url)));
    const latencies: number[] = [];
    let failures = 0;
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < PURCHASES; i = next++) {
          const t0 = performance.now();
          const outcome = await purchase(runtime.purchases, {
            attemptKey: `bench:${randomBytes(8).toString('hex')}`,
            channel: 'mpp',
            itemId: 'svc-pro-monthly',
            buyer: { email: `buyer${i}@example.com` },
            token: tokens[i] ?? '',
          });
          latencies.push(performance.now() - t0);
          if (outcome.kind !== 'completed') failures++;
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    report('purchase', {
      dialect,
      purchases: PURCHASES,
      concurrency: CONCURRENCY,
      purchasesPerSecond: Math.round(PURCHASES / seconds),
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      failures,
    });
  } finally {
    await runtime.close();
    await sandbox.close();
  }
}

export async function benchPurchase(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-bench-'));
  const sqlite = openDatabase({ kind: 'sqlite', file: path.join(dir, 'bench.sqlite') });
  try {
    await run('sqlite', sqlite);
  } finally {
    await sqlite.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const url = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const schema = `bench_${randomBytes(4).toString('hex')}`;
  const admin = openDatabase({ kind: 'postgres', url });
  try {
    await sql`create schema ${sql.id(schema)}`.execute(admin.db);
  } catch (error) {
    report('purchase', {
      dialect: 'postgres',
      skipped: `no PostgreSQL at BENCH_DATABASE_URL (${(error as Error).message})`,
    });
    await admin.close();
    return;
  }
  const postgres = openDatabase({ kind: 'postgres', url }, { searchPath: schema });
  try {
    await run('postgres', postgres);
  } finally {
    await postgres.close();
    await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
    await admin.close();
  }
}
