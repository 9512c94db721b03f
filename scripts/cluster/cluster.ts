/**
 * The scale-out test environment: N service instances (`node src/main.ts`) on one fresh PostgreSQL
 * database and one Redis, one external PSP sandbox shared by all, behind HAProxy (roundrobin,
 * health checks on /readyz), everything on loopback ports. `npm run cluster`, the cluster test and
 * the chaos suite start it through `startCluster`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from '../../test/helpers/ports.ts';

const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');
export const HAPROXY = process.env.HAPROXY_PATH ?? '/usr/sbin/haproxy';
export const PSP_SECRET_KEY = 'sk_test_cluster';
const PSP_WEBHOOK_SECRET = 'whsec_cluster';
const STARTUP_TIMEOUT_MS = 60_000;

export interface ClusterOptions {
  /** Service instances behind the balancer (default 2). */
  instances?: number;
  /** PostgreSQL to create the cluster's database in (default postgres://postgres@127.0.0.1:5432/postgres). */
  adminDatabaseUrl?: string;
  redisUrl?: string;
  /** Extra environment for every instance (limits, log level, leases). */
  env?: Record<string, string>;
  /** Progress lines; silent by default. */
  log?: (line: string) => void;
}

export interface Instance {
  /** `app1`, `app2`, ...: the HAProxy server name, sent back in `X-Served-By`. */
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly logFile: string;
  /** The running process, undefined while stopped. */
  readonly pid: number | undefined;
}

export interface Cluster {
  /** The load balancer: the service's public address. */
  readonly url: string;
  readonly sandboxUrl: string;
  readonly pspSecretKey: string;
  readonly databaseUrl: string;
  readonly redisUrl: string;
  /** Temporary directory with the HAProxy config, data directories and logs; removed by stop(). */
  readonly dir: string;
  readonly instances: readonly Instance[];
  /** The environment an instance runs with (also what `npm run svc` needs to reach the database). */
  readonly env: Readonly<Record<string, string>>;
  /** Sends `signal` (SIGKILL by default) to an instance and waits until it has exited. */
  kill(index: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts a stopped instance again on its port; resolves once it has printed its banner. */
  start(index: number): Promise<void>;
  /** Resolves once every instance answers /readyz with 200 directly (not through the balancer). */
  waitReady(timeoutMs?: number): Promise<void>;
  /** Stops everything it started and drops the database. */
  stop(): Promise<void>;
}

interface Child {
  process: ChildProcess;
  exited: Promise<void>;
}

function spawnLogged(command: string, args: string[], env: Record<string, string>, logFile: string): Child {
  const out = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(command, args, { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { process: child, exited };
}

/** Waits for `pattern` in the child's stdout; rejects if it exits first or takes too long. */
function waitForOutput(child: Child, pattern: RegExp, what: string, logFile: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(
      () => reject(new Error(`${what} did not start within ${STARTUP_TIMEOUT_MS / 1000} s; see ${logFile}`)),
      STARTUP_TIMEOUT_MS,
    );
    const onData = (chunk: Buffer) => {
      seen = (seen + chunk.toString()).slice(-4096);
      if (pattern.test(seen)) {
        clearTimeout(timer);
        child.process.stdout?.off('data', onData);
        resolve();
      }
    };
    child.process.stdout?.on('data', onData);
    void child.exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${what} exited during start; see ${logFile}`));
    });
  });
}

async function stopChild(child: Child | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child === undefined || child.process.exitCode !== null || child.process.signalCode !== null) return;
  child.process.kill(signal);
  const stopped = await Promise.race([child.exited.then(() => true), sleep(15_000).then(() => false)]);
  if (!stopped) {
    child.process.kill('SIGKILL');
    await child.exited;
  }
}

/**
 * The HAProxy configuration: roundrobin over the instances, each checked on /readyz every second;
 * X-Forwarded-For is the client's address alone.
 */
export function haproxyConfig(
  listenPort: number,
  servers: readonly { name: string; port: number }[],
): string {
  return [
    'global',
    '  maxconn 4096',
    // Servers going DOWN and UP (notice and above), not every request.
    '  log stdout format raw local0 notice',
    '',
    'defaults',
    '  mode http',
    '  log global',
    '  timeout connect 2s',
    // A health check may take this long: a busy instance answering /readyz in over a second (the
    // default, `inter`) is slow, not down. A dead one refuses the connection at once.
    '  timeout check 5s',
    '  timeout client 120s',
    '  timeout server 120s',
    // A request that cannot connect (its instance just died) is sent to another instance; one
    // already sent is never replayed: a POST may have taken effect.
    '  retries 3',
    '  option redispatch',
    '',
    'frontend svc',
    `  bind 127.0.0.1:${listenPort}`,
    // The address HAProxy saw replaces whatever X-Forwarded-For the client sent (`option
    // forwardfor` appends to it): clients here share the balancer's trusted loopback address, so
    // the instances would read past it onto a value the client wrote.
    '  http-request set-header X-Forwarded-For %[src]',
    '  default_backend instances',
    '',
    'backend instances',
    '  balance roundrobin',
    '  option httpchk GET /readyz',
    '  http-check expect status 200',
    '  default-server inter 1s fastinter 500ms fall 2 rise 2',
    '  http-response set-header X-Served-By %s',
    ...servers.map((server) => `  server ${server.name} 127.0.0.1:${server.port} check`),
    '',
  ].join('\n');
}

function databaseUrlFor(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.href;
}

async function withAdmin<T>(adminUrl: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

export async function startCluster(options: ClusterOptions = {}): Promise<Cluster> {
  const count = options.instances ?? 2;
  if (!Number.isInteger(count) || count < 1 || count > 16) throw new Error('instances must be 1 to 16');
  const log = options.log ?? (() => {});
  const adminUrl =
    options.adminDatabaseUrl ??
    process.env.CLUSTER_ADMIN_DATABASE_URL ??
    'postgres://postgres@127.0.0.1:5432/postgres';
  const redisUrl = options.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  execFileSync(HAPROXY, ['-v'], { stdio: 'ignore' });

  const dir = mkdtempSync(path.join(tmpdir(), 'svc-cluster-'));
  const databaseName = `svc_cluster_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const databaseUrl = databaseUrlFor(adminUrl, databaseName);
  let databaseCreated = false;
  let haproxy: Child | undefined;
  let sandbox: Child | undefined;
  const children: (Child | undefined)[] = [];

  const cleanUp = async () => {
    await Promise.all(children.map((child) => stopChild(child)));
    await stopChild(haproxy);
    await stopChild(sandbox);
    if (databaseCreated) {
      await withAdmin(adminUrl, (client) =>
        client.query(`drop database if exists "${databaseName}" with (force)`),
      );
      databaseCreated = false;
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await withAdmin(adminUrl, (client) => client.query(`create database "${databaseName}"`));
    databaseCreated = true;
    const lbPort = await freePort();
    const sandboxPort = await freePort();
    const url = `http://127.0.0.1:${lbPort}`;
    const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;

    const sandboxLog = path.join(dir, 'psp-sandbox.log');
    const sandboxDir = path.join(dir, 'psp-sandbox');
    mkdirSync(sandboxDir);
    sandbox = spawnLogged(
      process.execPath,
      ['src/psp/sandbox/main.ts'],
      {
        PATH: process.env.PATH ?? '',
        DATA_DIR: sandboxDir,
        PSP_SANDBOX_PORT: String(sandboxPort),
        PSP_SANDBOX_SECRET_KEY: PSP_SECRET_KEY,
        // The provider's events reach the service through the balancer, as they would in production.
        PSP_SANDBOX_WEBHOOK_URL: `${url}/psp/events`,
        PSP_SANDBOX_WEBHOOK_SECRET: PSP_WEBHOOK_SECRET,
      },
      sandboxLog,
    );
    await waitForOutput(sandbox, /listening on/, 'the PSP sandbox', sandboxLog);
    log(`PSP sandbox   ${sandboxUrl} (secret key ${PSP_SECRET_KEY}; log ${sandboxLog})`);

    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      BASE_URL: url,
      DATABASE_URL: databaseUrl,
      REDIS_URL: redisUrl,
      PSP_SECRET_KEY,
      PSP_API_BASE: sandboxUrl,
      PSP_WEBHOOK_SECRET,
      // Every instance must sign and check MPP challenges with the same secret.
      MPP_SECRET: randomBytes(32).toString('base64'),
      TRUST_PROXY: '127.0.0.1',
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      EVIDENCE_STORAGE: 'database',
      LOG_LEVEL: 'info',
      ...options.env,
    };
    const instances = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const name = `app${i + 1}`;
        const port = await freePort();
        const dataDir = path.join(dir, name);
        mkdirSync(dataDir);
        return {
          name,
          port,
          url: `http://127.0.0.1:${port}`,
          logFile: path.join(dir, `${name}.log`),
          dataDir,
        };
      }),
    );

    const startInstance = async (index: number) => {
      const instance = instances[index];
      if (instance === undefined) throw new Error(`no instance ${index}`);
      const running = children[index];
      if (running && running.process.exitCode === null && running.process.signalCode === null) {
        throw new Error(`${instance.name} is already running`);
      }
      const child = spawnLogged(
        process.execPath,
        ['src/main.ts'],
        { ...env, PORT: String(instance.port), DATA_DIR: instance.dataDir },
        instance.logFile,
      );
      children[index] = child;
      await waitForOutput(child, /svc ready in/, instance.name, instance.logFile);
    };
    // The first instance applies the migrations alone; the others then start together.
    await startInstance(0);
    await Promise.all(instances.slice(1).map((_, i) => startInstance(i + 1)));
    for (const instance of instances)
      log(`${instance.name.padEnd(13)} ${instance.url} (log ${instance.logFile})`);

    const configFile = path.join(dir, 'haproxy.cfg');
    writeFileSync(configFile, haproxyConfig(lbPort, instances));
    const haproxyLog = path.join(dir, 'haproxy.log');
    execFileSync(HAPROXY, ['-c', '-q', '-f', configFile]);
    haproxy = spawnLogged(HAPROXY, ['-db', '-f', configFile], { PATH: process.env.PATH ?? '' }, haproxyLog);

    const waitReady = async (timeoutMs = STARTUP_TIMEOUT_MS) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const ready = await Promise.all(
          instances.map((instance) =>
            fetch(`${instance.url}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
              (response) => response.status === 200,
              () => false,
            ),
          ),
        );
        if (ready.every(Boolean)) return;
        if (Date.now() > deadline) throw new Error(`instances not ready after ${timeoutMs / 1000} s`);
        await sleep(200);
      }
    };
    await waitReady();
    await waitBalanced(url, count);
    log(`database      ${databaseUrl} (dropped on exit)`);
    log(`load balancer ${url} (HAProxy config ${configFile})`);

    return {
      url,
      sandboxUrl,
      pspSecretKey: PSP_SECRET_KEY,
      databaseUrl,
      redisUrl,
      dir,
      env,
      instances: instances.map((instance, index) => ({
        name: instance.name,
        port: instance.port,
        url: instance.url,
        logFile: instance.logFile,
        get pid() {
          const child = children[index];
          return child && child.process.exitCode === null && child.process.signalCode === null
            ? child.process.pid
            : undefined;
        },
      })),
      async kill(index, signal = 'SIGKILL') {
        const child = children[index];
        if (child === undefined) throw new Error(`no instance ${index}`);
        child.process.kill(signal);
        await child.exited;
      },
      start: startInstance,
      waitReady,
      stop: cleanUp,
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

/** Waits until the balancer has every instance in rotation (each seen in X-Served-By). */
async function waitBalanced(url: string, count: number): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  const seen = new Set<string>();
  while (seen.size < count) {
    if (Date.now() > deadline) throw new Error(`the load balancer did not reach all ${count} instances`);
    try {
      const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      const server = response.headers.get('x-served-by');
      if (response.status === 200 && server) seen.add(server);
    } catch {
      // HAProxy is still starting.
    }
    if (seen.size < count) await sleep(100);
  }
}
