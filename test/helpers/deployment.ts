import { spawn } from 'node:child_process';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { type PurchaseFixture, SANDBOX_KEY, startPurchaseFixture } from './purchase.ts';
import { freePort } from './web.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

export interface Deployment extends PurchaseFixture {
  /** `http://127.0.0.1:<port>`: where the service listens and what its discovery documents name. */
  baseUrl: string;
  /** The flags that point the agent and the doctor at this deployment's PSP sandbox. */
  pspFlags: string[];
}

/**
 * The whole service with the PSP sandbox, on loopback, as an agent outside sees it: its documents
 * name the address it listens on. The clock is set to the real time because mppx checks a
 * challenge's expiry against it.
 */
export async function startDeployment(t: TestContext, env: Record<string, string> = {}): Promise<Deployment> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const fixture = await startPurchaseFixture(t, { env: { BASE_URL: baseUrl, ...env }, pspEventsTo: baseUrl });
  fixture.clock.set(new Date());
  await fixture.runtime.app.listen({ port, host: '127.0.0.1' });
  return { ...fixture, baseUrl, pspFlags: ['--psp-url', fixture.sandbox.url, '--psp-key', SANDBOX_KEY] };
}

/** What a `main(argv, io)` printed, line by line. */
export function capturedIo() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) } };
}

/** Runs `npm run -s <script> -- ...args` in the repository; resolves with its exit code and output. */
export function runNpmScript(
  script: string,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn('npm', ['run', '-s', script, '--', ...args], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}
