import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections?: number;
  durationSeconds?: number;
  /** Builds each request (e.g. a fresh idempotency key); overrides method/body/headers. */
  setupRequest?: (request: autocannon.Request) => autocannon.Request;
}

export interface LoadResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

export async function load(options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers,
    body: options.body,
    connections: options.connections ?? 10,
    duration: options.durationSeconds ?? Number(process.env.BENCH_SECONDS ?? 5),
    ...(options.setupRequest ? { requests: [{ setupRequest: options.setupRequest }] } : {}),
  });
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
  };
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
  PSP_WEBHOOK_SECRET: 'whsec_bench',
};
