import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pino, { type Logger } from 'pino';
import { loggerOptions } from '../src/http/logging.ts';

const run = promisify(execFile);

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  durationSeconds?: number;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

/** Runs autocannon in a child process (bench/load-worker.ts) and answers its result. */
export async function load(options: LoadOptions): Promise<LoadResult> {
  const worker = fileURLToPath(new URL('./load-worker.ts', import.meta.url));
  const { stdout } = await run(process.execPath, [
    worker,
    JSON.stringify({ durationSeconds: Number(process.env.BENCH_SECONDS ?? 5), ...options }),
  ]);
  const result = JSON.parse(stdout) as LoadResult;
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${options.url}: ${result.non2xx} answers not 2xx, ${result.errors} errors`);
  }
  return result;
}

/** `a` per second as a share of `b`, to two places. */
export function ratio(a: LoadResult, b: LoadResult): number {
  return Math.round((a.requestsPerSecond / b.requestsPerSecond) * 100) / 100;
}

/** One JSON line per benchmark, so later runs can be compared by a script. */
export function report(benchmark: string, fields: Record<string, unknown>): void {
  console.log(JSON.stringify({ benchmark, at: new Date().toISOString(), ...fields }));
}

/**
 * The settings production requires, so that benchmarks measure the production configuration.
 * These addresses are never contacted: benchmarks that charge or send mail inject the PSP
 * sandbox and the dev mailbox.
 */
export const PRODUCTION_ENV = {
  NODE_ENV: 'production',
  BASE_URL: 'http://localhost:3000',
  PSP_SECRET_KEY: 'sk_test_bench',
  SMTP_URL: 'smtp://mail.invalid:587',
  MPP_SECRET: 'bench-mpp-secret-of-at-least-32-bytes',
  ORDER_LINK_SECRET: 'bench-order-link-secret-of-32-bytes-or-more',
  PSP_WEBHOOK_SECRET: 'whsec_bench',
};

/** The production logger's settings (redaction included), writing to /dev/null instead of stdout. */
export function productionLogger(level: string): Logger {
  return pino(loggerOptions(level), pino.destination({ dest: '/dev/null', sync: true }));
}
