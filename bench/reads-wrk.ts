import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/db/database.ts';
import { systemClock } from '../src/shared/clock.ts';
import { workspaceWithKey } from './api-read.ts';
import { report } from './harness.ts';
import {
  cpuSeconds,
  firstLine,
  freePort,
  onEachDatabase,
  startNode,
  startServed,
  stop,
  waitForOk,
} from './processes.ts';
import { type WrkResult, wrk } from './wrk.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const PATHS = process.env.BENCH_READS?.split(',') ?? ['/api/v1/controls', '/api/v1/me'];

/**
 * Authenticated REST reads measured from outside: the service started as `npm start` starts it
 * (its own process, `info` logging to a file), `wrk -t1 -c16 -d5s` in another, against a bare
 * Fastify route serving the same bytes in a third; rounds alternate bare and ours, and each figure
 * is the median over the rounds (the ratio, of the per-round ratios). Beside requests a second, the
 * CPU time each server spent per answer (from /proc): on a machine others are loading, its ratio
 * (bare's per answer over ours) stays where the throughput ratio scatters. SQLite, then PostgreSQL
 * at BENCH_DATABASE_URL when one answers. One JSON line per database. BENCH_READS (comma-separated
 * paths) measures other reads.
 */
export async function benchReadsWrk(): Promise<void> {
  await onEachDatabase('reads-wrk', measure);
}

async function measure(dialect: 'sqlite' | 'postgres', databaseUrl: string, dir: string): Promise<void> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const service = startServed({
    dialect,
    databaseUrl,
    dir,
    port,
    env: {
      PSP_SANDBOX_PORT: String(await freePort()),
      API_RATE_LIMIT_PER_IP: '1000000000',
      API_RATE_LIMIT_PER_KEY: '1000000000',
    },
  });
  try {
    await waitForOk(`${base}/readyz`);
    const key = await workspaceKey(databaseUrl, base);
    const headers = { authorization: `Bearer ${key}` };
    const reads: Record<string, unknown> = {};
    for (const route of PATHS) {
      reads[route] = await againstBareRoute(`${base}${route}`, headers, dir, service.pid ?? 0);
    }
    report('reads-wrk', {
      dialect,
      load: { connections: CONNECTIONS, seconds: SECONDS, rounds: ROUNDS, loadAverage: loadavg()[0] },
      ...reads,
    });
  } finally {
    await stop(service);
  }
}

/** A workspace on the enterprise plan and a key of it, written the way the CLI writes: another connection. */
export async function workspaceKey(databaseUrl: string, baseUrl: string): Promise<string> {
  const handle = openDatabase(
    databaseUrl.startsWith('sqlite:')
      ? { kind: 'sqlite', file: databaseUrl.slice('sqlite:'.length) }
      : { kind: 'postgres', url: databaseUrl },
  );
  try {
    return (await workspaceWithKey(handle.db, systemClock, baseUrl)).key;
  } finally {
    await handle.close();
  }
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? 0;

/** The load, and what it cost the server: CPU microseconds per answer (steady under a busy machine). */
async function measured(pid: number, options: Parameters<typeof wrk>[0]) {
  const before = cpuSeconds(pid);
  const result = await wrk(options);
  const cpu = cpuSeconds(pid) - before;
  return {
    ...result,
    cpuUsPerRequest: Math.round((cpu * 1e6) / (result.requestsPerSecond * (options.seconds ?? 5))),
  };
}

async function againstBareRoute(
  url: string,
  headers: Record<string, string>,
  dir: string,
  servicePid: number,
) {
  const response = await fetch(url, { headers });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${body}`);
  const route = new URL(url).pathname;
  const bodyFile = path.join(dir, 'bare-body.json');
  writeFileSync(bodyFile, body);
  const bare = startNode(fileURLToPath(new URL('./bare-route.ts', import.meta.url)), [route, bodyFile], {});
  try {
    const bareUrl = `${await firstLine(bare)}${route}`;
    type Measured = WrkResult & { cpuUsPerRequest: number };
    const rounds: { bare: Measured; app: Measured }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const bareResult = await measured(bare.pid ?? 0, {
        url: bareUrl,
        connections: CONNECTIONS,
        seconds: SECONDS,
      });
      const appResult = await measured(servicePid, {
        url,
        headers,
        connections: CONNECTIONS,
        seconds: SECONDS,
      });
      if (appResult.failures > 0 || bareResult.failures > 0) {
        throw new Error(`${route}: ${appResult.failures} failed answers (bare ${bareResult.failures})`);
      }
      rounds.push({ bare: bareResult, app: appResult });
    }
    const summary = (side: 'app' | 'bare') => ({
      requestsPerSecond: median(rounds.map((r) => r[side].requestsPerSecond)),
      p50Ms: median(rounds.map((r) => r[side].p50Ms)),
      p99Ms: median(rounds.map((r) => r[side].p99Ms)),
      cpuUsPerRequest: median(rounds.map((r) => r[side].cpuUsPerRequest)),
    });
    const ratios = rounds.map(
      (r) => Math.round((r.app.requestsPerSecond / r.bare.requestsPerSecond) * 100) / 100,
    );
    return {
      bytes: Buffer.byteLength(body),
      app: summary('app'),
      bare: summary('bare'),
      ratio: median(ratios),
      ratios,
    };
  } finally {
    await stop(bare);
  }
}
