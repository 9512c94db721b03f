import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { report } from './harness.ts';
import { freePort } from './processes.ts';

const STARTS = Number(process.env.BENCH_STARTS ?? 5);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * `npm start` on a fresh data directory (so the first start migrates) with an empty compile cache
 * (as the first start after an install), then again on the same ones: milliseconds from spawning
 * npm to the first 200 from /healthz, the median of `STARTS`.
 */
export async function benchColdStart(): Promise<void> {
  const first: number[] = [];
  const again: number[] = [];
  for (let i = 0; i < STARTS; i++) {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-start-'));
    try {
      first.push(await startOnce(dataDir));
      again.push(await startOnce(dataDir));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
  report('cold-start', { freshDataMs: median(first), existingDataMs: median(again), starts: STARTS });
}

function median(values: number[]): number {
  return Math.round(values.sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0);
}

async function startOnce(dataDir: string): Promise<number> {
  const [port, sandboxPort] = [await freePort(), await freePort()];
  const started = performance.now();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    detached: true,
    stdio: 'ignore',
    env: {
      ...process.env,
      NODE_ENV: 'development',
      PORT: String(port),
      PSP_SANDBOX_PORT: String(sandboxPort),
      DATA_DIR: dataDir,
      DATABASE_URL: `sqlite:${path.join(dataDir, 'svc.sqlite')}`,
      NODE_COMPILE_CACHE: path.join(dataDir, 'compile-cache'),
      LOG_LEVEL: 'info',
    },
  });
  try {
    for (;;) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`);
        await response.arrayBuffer();
        if (response.status === 200) return performance.now() - started;
      } catch {
        // Not listening yet.
      }
      if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  } finally {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}
