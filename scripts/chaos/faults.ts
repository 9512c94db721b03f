/**
 * The faults the chaos run injects. Each `inject` starts the fault and returns the function that
 * removes it; the run then measures how long the service takes to recover.
 */
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';
import type { Cluster } from '../cluster/cluster.ts';
import { clearFaults, setFaults } from '../cluster/sandbox.ts';

const run = promisify(execFile);

export type FaultName =
  | 'instance-kill'
  | 'psp-fail'
  | 'psp-timeout'
  | 'psp-slow'
  | 'redis-stop'
  | 'postgres-connections-cut'
  | 'postgres-restart';

export interface Fault {
  name: FaultName;
  /** What was done, in words for the report. */
  describe: string;
  /** Whether the database is down during it (500s are then documented). */
  outage: boolean;
  /** Starts the fault; the returned function ends it (after `holdMs`, or at once for a restart). */
  inject(holdMs: number): Promise<() => Promise<void>>;
}

export async function redisAnswers(): Promise<boolean> {
  try {
    return (await run('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'ping'])).stdout.trim() === 'PONG';
  } catch {
    return false;
  }
}

async function startRedis(): Promise<void> {
  await run('redis-server', [
    '--daemonize',
    'yes',
    '--bind',
    '127.0.0.1',
    '--port',
    '6379',
    '--save',
    '',
    '--appendonly',
    'no',
  ]);
  for (let i = 0; i < 100 && !(await redisAnswers()); i++) await sleep(100);
}

export async function ensureRedis(): Promise<void> {
  if (!(await redisAnswers())) await startRedis();
}

export async function postgresAnswers(): Promise<boolean> {
  try {
    await run('pg_isready', ['-q', '-h', '127.0.0.1', '-p', '5432']);
    return true;
  } catch {
    return false;
  }
}

function postgresVersion(): string {
  const [version] = readdirSync('/etc/postgresql');
  if (version === undefined) throw new Error('no PostgreSQL cluster under /etc/postgresql');
  return version;
}

export function faults(cluster: Cluster, options: { postgres: boolean; redis: boolean }): Fault[] {
  const psp = (settings: Record<string, number>) => async (holdMs: number) => {
    await setFaults(cluster.sandboxUrl, cluster.pspSecretKey, settings);
    await sleep(holdMs);
    return () => clearFaults(cluster.sandboxUrl, cluster.pspSecretKey);
  };
  let nextVictim = 0;
  const list: Fault[] = [
    {
      name: 'instance-kill',
      describe: 'SIGKILL one instance, start it again after the hold',
      outage: false,
      async inject(holdMs) {
        const victim = nextVictim++ % cluster.instances.length;
        await cluster.kill(victim, 'SIGKILL');
        await sleep(holdMs);
        return () => cluster.start(victim);
      },
    },
    {
      name: 'psp-fail',
      describe: 'the PSP answers the next 40 requests with 500',
      outage: false,
      inject: psp({ fail_next: 40, fail_status: 500 }),
    },
    {
      name: 'psp-timeout',
      describe: 'the PSP answers after 20 s (beyond the 15 s client timeout) and cuts 5 charge responses',
      outage: false,
      inject: psp({ latency_ms: 20_000, drop_responses: 5 }),
    },
    {
      name: 'psp-slow',
      describe: 'the PSP answers every request 2 s late',
      outage: false,
      inject: psp({ latency_ms: 2000 }),
    },
  ];
  list.push({
    name: 'postgres-connections-cut',
    describe: "pg_terminate_backend on every connection to the run's database (PostgreSQL itself stays up)",
    outage: true,
    async inject() {
      const admin = new pg.Client({ connectionString: cluster.databaseUrl });
      await admin.connect();
      try {
        await admin.query(
          'select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
        );
      } finally {
        await admin.end();
      }
      return async () => {};
    },
  });
  if (options.redis) {
    list.push({
      name: 'redis-stop',
      describe: 'redis-cli shutdown nosave, redis-server again after the hold',
      outage: false,
      async inject(holdMs) {
        await run('redis-cli', ['-h', '127.0.0.1', '-p', '6379', 'shutdown', 'nosave']).catch(
          () => undefined,
        );
        await sleep(holdMs);
        return startRedis;
      },
    });
  }
  if (options.postgres) {
    list.push({
      name: 'postgres-restart',
      describe: 'pg_ctlcluster restart (every connection is cut; the server is down while it restarts)',
      outage: true,
      async inject() {
        await run('pg_ctlcluster', ['--skip-systemctl-redirect', postgresVersion(), 'main', 'restart']);
        return async () => {};
      },
    });
  }
  return list;
}
