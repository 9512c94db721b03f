import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { report } from './harness.ts';
import { cpuSeconds, firstLine, freePort, onEachDatabase, startNode, stop, waitForOk } from './processes.ts';
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
  await onEachDatabase('acp-http', measure);
}

async function measure(dialect: 'sqlite' | 'postgres', databaseUrl: string, dir: string): Promise<void> {
  const sandboxPort = await freePort();
  const sandbox = startNode(fileURLToPath(new URL('../src/psp/sandbox/main.ts', import.meta.url)), [], {
    env: {
      ...process.env,
      DATA_DIR: path.join(dir, `psp-${dialect}`),
      PSP_SANDBOX_PORT: String(sandboxPort),
      PSP_SANDBOX_SECRET_KEY: SANDBOX_KEY,
    },
  });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  let service: ReturnType<typeof startNode> | undefined;
  try {
    const sandboxUrl = /listening on (\S+),/.exec(await firstLine(sandbox))?.[1] ?? '';
    service = startNode(fileURLToPath(new URL('./served.ts', import.meta.url)), [], {
      env: {
        ...process.env,
        NODE_ENV: 'development',
        DATABASE_URL: databaseUrl,
        DATA_DIR: path.join(dir, `data-${dialect}`),
        HOST: '127.0.0.1',
        PORT: String(port),
        BASE_URL: base,
        PSP_SECRET_KEY: SANDBOX_KEY,
        PSP_API_BASE: sandboxUrl,
        PSP_WEBHOOK_SECRET: 'whsec_bench',
        LOG_LEVEL: 'info',
        RATE_LIMIT_MAX: '1000000000',
      },
      logFile: path.join(dir, `service-${dialect}.log`),
    });
    await waitForOk(`${base}/readyz`);
    const psp = { url: sandboxUrl, secretKey: SANDBOX_KEY };
    // A short warm-up, so the figure is the service's steady state rather than its first compile.
    await clientPurchases({
      kind: 'acp',
      url: base,
      tokens: [],
      concurrency: CONCURRENCY,
      psp: { ...psp, purchases: 200 },
    });
    const cpuBefore = cpuSeconds(service.pid ?? 0);
    const sandboxCpuBefore = cpuSeconds(sandbox.pid ?? 0);
    const result = await clientPurchases({
      kind: 'acp',
      url: base,
      tokens: [],
      concurrency: CONCURRENCY,
      psp: { ...psp, purchases: PURCHASES },
    });
    // What the service spent per purchase (all its threads), steady where purchases a second scatter.
    const serviceCpuMsPerPurchase =
      Math.round(((cpuSeconds(service.pid ?? 0) - cpuBefore) * 1e5) / PURCHASES) / 100;
    const sandboxCpuMsPerPurchase =
      Math.round(((cpuSeconds(sandbox.pid ?? 0) - sandboxCpuBefore) * 1e5) / PURCHASES) / 100;
    report('acp-http', {
      dialect,
      loadAverage: loadavg()[0],
      ...result,
      serviceCpuMsPerPurchase,
      sandboxCpuMsPerPurchase,
    });
  } finally {
    if (service) await stop(service);
    await stop(sandbox);
  }
}
