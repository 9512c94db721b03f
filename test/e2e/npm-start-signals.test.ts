// db-scope: sqlite

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort, portIsFree } from '../helpers/ports.ts';

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** pid -> parent pid and state of every process, from /proc. */
function processTable(): Map<number, { ppid: number; state: string }> {
  const table = new Map<number, { ppid: number; state: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      table.set(Number(entry), { ppid: Number(ppid), state: state ?? '' });
    } catch {
      // The process ended while we read the table.
    }
  }
  return table;
}

function descendantsOf(pid: number): number[] {
  const table = processTable();
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const [child, { ppid }] of table) {
      if (ppid === parent) {
        found.push(child);
        queue.push(child);
      }
    }
  }
  return found;
}

/** Alive and not merely a zombie waiting to be reaped. */
function running(pids: number[]): number[] {
  const table = processTable();
  return pids.filter((pid) => {
    const state = table.get(pid)?.state;
    return state !== undefined && state !== 'Z' && state !== 'X';
  });
}

async function waitForHealth(url: string, exited: () => boolean, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (exited()) throw new Error(`npm start exited before serving /healthz:\n${output()}`);
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {
      // Not listening yet.
    }
    await sleep(200);
  }
  throw new Error(`npm start did not serve /healthz within a minute:\n${output()}`);
}

async function stopsGracefullyOn(signal: 'SIGTERM' | 'SIGINT', t: { after: (fn: () => void) => void }) {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-npm-start-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const sandboxPort = await freePort();
  const npm = spawn('npm', ['start'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? tmpdir(),
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      PSP_SANDBOX_PORT: String(sandboxPort),
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  npm.stdout.on('data', (chunk) => (output += chunk));
  npm.stderr.on('data', (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => npm.on('exit', (code) => resolve(code)));
  let started: number[] = [];
  t.after(() => {
    for (const pid of running([...started, npm.pid ?? 0])) process.kill(pid, 'SIGKILL');
  });

  await waitForHealth(
    `http://127.0.0.1:${port}/healthz`,
    () => npm.exitCode !== null,
    () => output,
  );
  started = descendantsOf(npm.pid ?? 0);
  assert.ok(started.length > 0, 'npm start runs the service in a child process');

  npm.kill(signal);
  const code = await Promise.race([exit, sleep(20_000).then(() => 'still running' as const)]);
  assert.equal(code, 0, `npm start after ${signal}:\n${output}`);
  for (let tries = 0; tries < 20 && running(started).length > 0; tries += 1) await sleep(100);
  assert.deepEqual(running(started), [], `processes left behind by npm start after ${signal}`);
  assert.ok(await portIsFree(port), `port ${port} is free again`);
  assert.ok(await portIsFree(sandboxPort), `the PSP sandbox port ${sandboxPort} is free again`);
  assert.match(output, new RegExp(`"signal":"${signal}".*shutting down`));
}

describe('npm start under a supervisor', { skip: process.platform !== 'linux' && 'reads /proc' }, () => {
  it('SIGTERM to the npm process stops the service gracefully and frees the port', async (t) => {
    await stopsGracefullyOn('SIGTERM', t);
  });

  it('SIGINT to the npm process stops the service gracefully and frees the port', async (t) => {
    await stopsGracefullyOn('SIGINT', t);
  });
});
