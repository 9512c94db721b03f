import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
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
import { CONCURRENCY, clientPurchases, PURCHASES } from './purchase-harness.ts';

const SANDBOX_KEY = 'sk_test_bench';

/**
 * An agent's whole ACP purchase over HTTP, measured from outside: the PSP sandbox in a process of
 * its own, the service started as `npm start` starts it (pointed at that sandbox as at a real
 * PSP, `info` logging to a file), and the agents in a third, BENCH_CONCURRENCY (8) at once, each
 * minting a token from the sandbox, creating a session with a buyer and completing it. Reports
 * purchases a second, the complete's own p50/p99, and the CPU ms per purchase of the service and
 * the sandbox (from /proc) and of the agents (their own count): on two cores the three share, their
 * sum bounds purchases a second. SQLite, then PostgreSQL when one answers.
 */
export async function benchAcpHttp(): Promise<void> {
  await onEachDatabase('acp-http', async (dialect, databaseUrl, dir) => {
    const sandbox = await startSandbox(path.join(dir, `psp-${dialect}`));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let service: ChildProcess | undefined;
    try {
      service = startServed({
        dialect,
        databaseUrl,
        dir,
        port,
        env: {
          PSP_SECRET_KEY: SANDBOX_KEY,
          PSP_API_BASE: sandbox.url,
          PSP_WEBHOOK_SECRET: 'whsec_bench',
          RATE_LIMIT_MAX: '1000000000',
        },
      });
      await waitForOk(`${base}/readyz`);
      report('acp-http', { dialect, ...(await purchasesAgainst(service, base, sandbox)) });
    } finally {
      if (service) await stop(service);
      await stop(sandbox.process);
    }
  });
}

/**
 * The same agents and sandbox against `bench/bare-purchase.ts`, a server that only charges each
 * token: what is left of the machine for a purchase once the agents and the PSP have their share.
 */
export async function benchAcpFloor(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'svc-acp-floor-'));
  const sandbox = await startSandbox(path.join(dir, 'psp'));
  let bare: ChildProcess | undefined;
  try {
    bare = startNode(
      fileURLToPath(new URL('./bare-purchase.ts', import.meta.url)),
      [sandbox.url, SANDBOX_KEY],
      {},
    );
    const base = await firstLine(bare);
    report('acp-floor', await purchasesAgainst(bare, base, sandbox));
  } finally {
    if (bare) await stop(bare);
    await stop(sandbox.process);
    rmSync(dir, { recursive: true, force: true });
  }
}

interface Sandbox {
  process: ChildProcess;
  url: string;
}

async function startSandbox(dataDir: string): Promise<Sandbox> {
  const sandbox = startNode(fileURLToPath(new URL('../src/psp/sandbox/main.ts', import.meta.url)), [], {
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PSP_SANDBOX_PORT: String(await freePort()),
      PSP_SANDBOX_SECRET_KEY: SANDBOX_KEY,
    },
  });
  try {
    return { process: sandbox, url: /listening on (\S+),/.exec(await firstLine(sandbox))?.[1] ?? '' };
  } catch (error) {
    await stop(sandbox);
    throw error;
  }
}

/** PURCHASES purchases against the server at `base`, after a short warm-up, with each process's CPU. */
async function purchasesAgainst(server: ChildProcess, base: string, sandbox: Sandbox) {
  const psp = { url: sandbox.url, secretKey: SANDBOX_KEY };
  const purchases = (count: number) =>
    clientPurchases({
      kind: 'acp',
      url: base,
      tokens: [],
      concurrency: CONCURRENCY,
      psp: { ...psp, purchases: count },
    });
  // A short warm-up, so the figure is the server's steady state rather than its first compile.
  await purchases(200);
  const perPurchase = (pid: number | undefined) => {
    const before = cpuSeconds(pid ?? 0);
    return () => Math.round(((cpuSeconds(pid ?? 0) - before) * 1e5) / PURCHASES) / 100;
  };
  const serverCpu = perPurchase(server.pid);
  const sandboxCpu = perPurchase(sandbox.process.pid);
  const result = await purchases(PURCHASES);
  return {
    loadAverage: loadavg()[0],
    ...result,
    // What the server spent per purchase (all its threads), steady where purchases a second scatter.
    serviceCpuMsPerPurchase: serverCpu(),
    sandboxCpuMsPerPurchase: sandboxCpu(),
  };
}
