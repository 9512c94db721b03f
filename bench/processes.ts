import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { openDatabase } from '../src/db/database.ts';
import { report } from './harness.ts';

/** CPU seconds a process has used so far (user and system, all its threads), from /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A port free on loopback now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * A Node script in a process of its own; its output goes to `logFile` as a shell's `> file` sends
 * it (the file itself, no process copying it on the way), or is piped when absent.
 * `BENCH_NODE_ARGS` (say `--cpu-prof --cpu-prof-dir=/tmp/prof`) is passed to it.
 */
export function startNode(
  script: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; logFile?: string },
) {
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const output = options.logFile === undefined ? 'pipe' : openSync(options.logFile, 'a');
  try {
    return spawn(process.execPath, [...nodeArgs, script, ...args], {
      env: options.env ?? process.env,
      stdio: ['ignore', output, 'inherit'],
    });
  } finally {
    if (typeof output === 'number') closeSync(output);
  }
}

/**
 * The service as `npm start` runs it (`bench/served.ts`) on `databaseUrl`, listening on loopback at
 * `port`, `info` logging to `service-<dialect>.log` in `dir`; `env` adds to its configuration.
 */
export function startServed(options: {
  dialect: string;
  databaseUrl: string;
  dir: string;
  port: number;
  env: Record<string, string>;
}): ChildProcess {
  const { dialect, dir, port } = options;
  return startNode(fileURLToPath(new URL('./served.ts', import.meta.url)), [], {
    env: {
      ...process.env,
      NODE_ENV: 'development',
      DATABASE_URL: options.databaseUrl,
      DATA_DIR: path.join(dir, `data-${dialect}`),
      HOST: '127.0.0.1',
      PORT: String(port),
      BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'info',
      ...options.env,
    },
    logFile: path.join(dir, `service-${dialect}.log`),
  });
}

/** The first line the process prints. */
export function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const end = out.indexOf('\n');
      if (end >= 0) {
        child.stdout?.off('data', onData);
        resolve(out.slice(0, end).trim());
      }
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`process exited ${code} before printing`)));
  });
}

/** Waits until `url` answers 200, for at most `seconds`. */
export async function waitForOk(url: string, seconds = 60): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    try {
      if ((await fetch(url)).status === 200) return;
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not answer 200 within ${seconds} s`);
}

/** Ends the process and waits for it to exit. */
export function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/** `BENCH_DIALECTS=sqlite` skips PostgreSQL. */
const DIALECTS = (process.env.BENCH_DIALECTS ?? 'sqlite,postgres').split(',');

/**
 * Runs `measure` against a service process's database: a SQLite file, then a fresh PostgreSQL
 * database at BENCH_DATABASE_URL (reported as skipped when none answers), dropped afterwards.
 * `dir` is a temporary directory for the processes' data and logs, removed at the end.
 */
export async function onEachDatabase(
  benchmark: string,
  measure: (dialect: 'sqlite' | 'postgres', databaseUrl: string, dir: string) => Promise<void>,
): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), `svc-${benchmark}-`));
  try {
    if (DIALECTS.includes('sqlite')) await measure('sqlite', `sqlite:${path.join(dir, 'svc.sqlite')}`, dir);
    if (!DIALECTS.includes('postgres')) return;
    const admin = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const name = `bench_${benchmark.replaceAll('-', '_')}_${process.pid}`;
    const server = openDatabase({ kind: 'postgres', url: admin });
    try {
      await sql`create database ${sql.id(name)}`.execute(server.db);
    } catch (error) {
      report(benchmark, { dialect: 'postgres', skipped: `no PostgreSQL (${(error as Error).message})` });
      await server.close();
      return;
    }
    try {
      const url = new URL(admin);
      url.pathname = `/${name}`;
      await measure('postgres', url.toString(), dir);
    } finally {
      await sql`drop database if exists ${sql.id(name)} with (force)`.execute(server.db);
      await server.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
