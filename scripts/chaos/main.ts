/**
 * `npm run chaos -- --duration <s> [--instances N] [--restart-postgres]`: drives purchases on ACP,
 * UCP and MPP, REST writes, evidence uploads and webhook deliveries through the cluster's load
 * balancer while it kills instances, stops Redis, makes the PSP fail, time out and answer slowly,
 * and (only with --restart-postgres or CHAOS_RESTART_POSTGRES=true: it cuts every connection to
 * the machine's PostgreSQL) restarts PostgreSQL. Then it waits for recovery, checks the
 * invariants and prints them as figures; exits 1 when one fails. docs/operations.md explains them.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs, promisify } from 'node:util';
import { openDatabase } from '../../src/db/database.ts';
import { type Cluster, startCluster } from '../cluster/cluster.ts';
import { clearFaults, mintToken } from '../cluster/sandbox.ts';
import { ensureRedis, type Fault, faults, postgresAnswers } from './faults.ts';
import { type Check, checkInvariants, OUTAGE_GRACE_MS, readLedger, settled } from './invariants.ts';
import { call, Journal, parseJson } from './journal.ts';
import { type Receiver, startReceiver } from './receiver.ts';
import { BUY, type Client, type Protocol, type Purchase, RestClient } from './workload.ts';

const run = promisify(execFile);
const UNLIMITED = '1000000000';
const SETTLE_TIMEOUT_MS = 240_000;
const PURCHASE_DEADLINE_MS = 120_000;

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '300' },
    instances: { type: 'string', default: '2' },
    'restart-postgres': { type: 'boolean', default: false },
    logs: { type: 'string' },
  },
});
const durationS = Number(values.duration);
const instances = Number(values.instances);
if (!Number.isInteger(durationS) || durationS < 30 || durationS > 3600) {
  console.error(`--duration must be whole seconds from 30 to 3600 (got ${values.duration})`);
  process.exit(64);
}
if (!Number.isInteger(instances) || instances < 2 || instances > 8) {
  console.error(`--instances must be an integer from 2 to 8 (got ${values.instances})`);
  process.exit(64);
}
const restartPostgres = values['restart-postgres'] || process.env.CHAOS_RESTART_POSTGRES === 'true';

const say = (line: string) => console.log(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}`);

async function commandExists(command: string): Promise<boolean> {
  return run('sh', ['-c', `command -v ${command}`]).then(
    () => true,
    () => false,
  );
}

/** Shared payment tokens minted before the faults start (the PSP faults would fail the minting too). */
async function mintTokens(cluster: Cluster, count: number): Promise<string[]> {
  const tokens: string[] = [];
  while (tokens.length < count) {
    const batch = Math.min(25, count - tokens.length);
    tokens.push(
      ...(await Promise.all(
        Array.from({ length: batch }, () => mintToken(cluster.sandboxUrl, cluster.pspSecretKey)),
      )),
    );
  }
  return tokens;
}

/** The first purchase's workspace, with an API key made by the operator CLI and a webhook subscription. */
async function restClientFor(
  cluster: Cluster,
  client: Client,
  orderId: string,
  receiver: Receiver,
): Promise<RestClient> {
  const database = openDatabase({ kind: 'postgres', url: cluster.databaseUrl });
  const order = await database.db
    .selectFrom('orders')
    .where('id', '=', orderId)
    .select('workspace_id')
    .executeTakeFirstOrThrow()
    .finally(() => database.close());
  const { stdout } = await run(
    process.execPath,
    ['src/cli.ts', 'api-keys', 'create', '--workspace', order.workspace_id, '--name', 'chaos'],
    { env: { ...cluster.env } },
  );
  const key = /svc_live_[0-9A-Za-z]{36}/.exec(stdout)?.[0];
  if (key === undefined) throw new Error(`npm run svc -- api-keys create printed no key:\n${stdout}`);
  const subscribed = await call(client.journal, 'rest.hook', `${cluster.url}/api/v1/hooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url, event_types: ['task.created', 'evidence.created'] }),
  });
  const secret = parseJson(subscribed.text).secret;
  if (subscribed.status !== 201 || typeof secret !== 'string') {
    throw new Error(`subscribing the webhook receiver answered ${subscribed.status}: ${subscribed.text}`);
  }
  receiver.trust(secret);
  return new RestClient(client, key);
}

/** Which faults when: every kind at least once, the PostgreSQL restart at most once, one every ~30 s. */
function schedule(all: Fault[]): Fault[] {
  const repeatable = all.filter((fault) => fault.name !== 'postgres-restart');
  const postgres = all.find((fault) => fault.name === 'postgres-restart');
  const slots = Math.max(all.length, Math.floor(durationS / 30));
  const plan = Array.from(
    { length: slots - (postgres ? 1 : 0) },
    (_, i) => repeatable[i % repeatable.length],
  );
  if (postgres) plan.splice(Math.min(3, plan.length), 0, postgres);
  return plan.filter((fault): fault is Fault => fault !== undefined);
}

interface Injected {
  fault: Fault;
  heldMs: number;
  recoveryMs: number;
  clientErrors: number;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '0%' : `${((100 * part) / whole).toFixed(1)}%`;
}

async function main(): Promise<number> {
  const redis = (await commandExists('redis-server')) && (await commandExists('redis-cli'));
  if (redis) await ensureRedis();
  else say('redis-server/redis-cli not installed: the Redis fault is skipped');
  if (!(await postgresAnswers())) throw new Error('PostgreSQL does not answer on 127.0.0.1:5432');

  say(`starting ${instances} instances behind HAProxy`);
  const cluster = await startCluster({
    instances,
    env: {
      RATE_LIMIT_MAX: UNLIMITED,
      API_RATE_LIMIT_PER_IP: UNLIMITED,
      API_RATE_LIMIT_PER_KEY: UNLIMITED,
      // A job whose instance was killed runs again after 30 s instead of 5 minutes.
      JOB_LEASE_MS: '30000',
      JOB_POLL_INTERVAL_MS: '250',
    },
    log: say,
  });
  const interrupted = (signal: NodeJS.Signals) => {
    say(`${signal}: stopping the cluster`);
    void cluster.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const receiver = await startReceiver();
  const journal = new Journal();
  const client: Client = { url: cluster.url, journal, purchaseDeadlineMs: PURCHASE_DEADLINE_MS };
  const purchases: Purchase[] = [];
  const injected: Injected[] = [];
  const crashes: string[] = [];
  try {
    const tokens = await mintTokens(cluster, durationS * 6 + 100);
    say(`minted ${tokens.length} payment tokens`);
    let bought = 0;
    const buy = async (protocol: Protocol, item?: string) => {
      const token = tokens.pop();
      if (token === undefined) return undefined;
      const purchase = await BUY[protocol](client, token, `chaos+${++bought}@example.com`, item);
      purchases.push(purchase);
      return purchase;
    };
    // The REST client's workspace: Enterprise, for the highest API rate of the plans.
    const first = await buy('acp', 'svc-enterprise-monthly');
    if (first?.orderId === undefined) throw new Error(`the first purchase failed: ${first?.detail}`);
    const rest = await restClientFor(cluster, client, first.orderId, receiver);

    const started = Date.now();
    const stopAt = started + durationS * 1000;
    const loop = async (work: () => Promise<unknown>, pauseMs: number) => {
      while (Date.now() < stopAt) {
        await work();
        await sleep(pauseMs);
      }
    };
    const workers = [
      loop(() => buy('acp'), 300),
      loop(() => buy('ucp'), 300),
      loop(() => buy('mpp'), 300),
      loop(() => rest.createTask(), 250),
      loop(() => rest.uploadEvidence(), 500),
    ];

    const plan = schedule(faults(cluster, { postgres: restartPostgres, redis }));
    const slotMs = (durationS * 1000) / plan.length;
    const holdMs = Math.round(Math.min(10_000, Math.max(3000, slotMs * 0.35)));
    say(`running ${durationS} s: ${plan.length} faults, each held ${holdMs / 1000} s`);
    for (const [i, fault] of plan.entries()) {
      const slotStart = started + i * slotMs + 2000;
      if (Date.now() < slotStart) await sleep(slotStart - Date.now());
      if (Date.now() > stopAt - 5000) break;
      say(`fault: ${fault.name} (${fault.describe})`);
      const window = journal.open(fault.name, fault.outage);
      const end = await fault.inject(holdMs);
      const removing = Date.now();
      await end();
      const recovered = await recoveryOf(cluster, buy, crashes, fault.name);
      window.to = recovered;
      const errors = journal.responses.filter(
        (seen) => seen.at >= window.from && seen.at <= recovered && (seen.status === 0 || seen.status >= 500),
      ).length;
      injected.push({
        fault,
        heldMs: removing - window.from,
        recoveryMs: recovered - removing,
        clientErrors: errors,
      });
      say(`  recovered ${((recovered - removing) / 1000).toFixed(1)} s after the fault ended`);
    }
    await Promise.all(workers);
    say('load stopped; waiting for recovery to settle every purchase and delivery');
    await clearFaults(cluster.sandboxUrl, cluster.pspSecretKey);
    if (redis) await ensureRedis();

    const settleStarted = Date.now();
    let ledger = await readLedger(cluster);
    while (!settled(ledger, rest.acknowledged, receiver) && Date.now() - settleStarted < SETTLE_TIMEOUT_MS) {
      await sleep(2000);
      ledger = await readLedger(cluster);
    }
    const settleMs = Date.now() - settleStarted;
    const checks = [
      {
        name: 'instances that crashed on their own',
        value: crashes.length === 0 ? 0 : `${crashes.length} (${crashes.join(', ')})`,
        ok: crashes.length === 0,
      },
      ...(await checkInvariants({ ledger, purchases, rest, receiver, journal })),
    ];
    report({ cluster, journal, purchases, rest, injected, settleMs, checks });
    return checks.every((check) => check.ok) ? 0 : 1;
  } finally {
    await receiver.close();
    if (values.logs) keepLogs(cluster, values.logs);
    await cluster.stop();
  }
}

/** Copies the instances', HAProxy's and the sandbox's logs out of the cluster's directory before it goes. */
function keepLogs(cluster: Cluster, into: string): void {
  mkdirSync(into, { recursive: true });
  for (const file of readdirSync(cluster.dir).filter((name) => name.endsWith('.log'))) {
    copyFileSync(path.join(cluster.dir, file), path.join(into, file));
  }
  say(`logs kept in ${into}`);
}

/**
 * When every instance is ready and a probe purchase through the balancer completes. An instance
 * that died on its own (not one the run killed) is a crash: it is counted and started again, as
 * a supervisor would.
 */
async function recoveryOf(
  cluster: Cluster,
  buy: (protocol: Protocol) => Promise<Purchase | undefined>,
  crashes: string[],
  fault: string,
) {
  for (;;) {
    for (const [index, instance] of cluster.instances.entries()) {
      if (instance.pid !== undefined) continue;
      say(`  ${instance.name} crashed during ${fault}; starting it again (see its log)`);
      crashes.push(`${instance.name} during ${fault}`);
      await cluster.start(index);
    }
    try {
      await cluster.waitReady(120_000);
    } catch (error) {
      if (cluster.instances.every((instance) => instance.pid !== undefined)) throw error;
      continue;
    }
    const probe = await buy('acp');
    if (probe === undefined || probe.outcome === 'succeeded') return Date.now();
  }
}

function report(input: {
  cluster: Cluster;
  journal: Journal;
  purchases: readonly Purchase[];
  rest: RestClient;
  injected: readonly Injected[];
  settleMs: number;
  checks: readonly Check[];
}): void {
  const { journal, purchases, rest, injected, settleMs, checks } = input;
  const byStatus = new Map<string, number>();
  for (const seen of journal.responses) {
    const key = seen.status === 0 ? 'no answer' : String(seen.status);
    byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
  }
  const lines = [
    '',
    `chaos run: ${durationS} s, ${input.cluster.instances.length} instances behind HAProxy, PostgreSQL restart ${restartPostgres ? 'on' : 'off'}`,
    '',
    `requests driven: ${journal.responses.length} through the load balancer`,
    `  by status: ${[...byStatus]
      .sort()
      .map(([status, n]) => `${status}: ${n}`)
      .join(', ')}`,
  ];
  for (const protocol of ['acp', 'ucp', 'mpp'] as const) {
    const mine = purchases.filter((purchase) => purchase.protocol === protocol);
    const count = (outcome: Purchase['outcome']) =>
      mine.filter((purchase) => purchase.outcome === outcome).length;
    lines.push(
      `  ${protocol.toUpperCase()} purchases: ${mine.length} (succeeded ${count('succeeded')}, refused ${count('refused')}, abandoned ${count('abandoned')})`,
    );
  }
  for (const purchase of purchases.filter((purchase) => purchase.outcome !== 'succeeded').slice(0, 5)) {
    lines.push(`    ${purchase.protocol} ${purchase.outcome}: ${purchase.detail}`);
  }
  const tasks = rest.acknowledged.filter((write) => write.type === 'task.created').length;
  lines.push(
    `  REST writes acknowledged: ${tasks} tasks, ${rest.uploads.length} evidence uploads (${rest.uploads.reduce((n, upload) => n + upload.bytes, 0)} bytes)`,
    '',
    `faults injected: ${injected.length} (recovered: from the fault's end until every instance answers /readyz and a probe purchase completes)`,
  );
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1).padStart(5)} s`;
  for (const { fault, heldMs, recoveryMs, clientErrors } of injected) {
    lines.push(
      `  ${fault.name.padEnd(24)} held ${seconds(heldMs)}, recovered ${seconds(recoveryMs)} after it (${seconds(heldMs + recoveryMs)} from its start), ${clientErrors} client errors (5xx or no answer)`,
    );
  }
  for (const outage of journal.outages) {
    const inside = journal.responses.filter(
      (seen) => seen.status === 500 && Journal.within([outage], seen.at, OUTAGE_GRACE_MS),
    ).length;
    lines.push(
      `  database-outage window: ${seconds((outage.to ?? Date.now()) - outage.from)} (+${OUTAGE_GRACE_MS / 1000} s for requests in flight), ${inside} responses of 500 in it`,
    );
  }
  const unanswered = journal.responses.filter((seen) => seen.status === 0 || seen.status >= 500).length;
  lines.push(
    `  5xx or no answer overall: ${unanswered} (${percent(unanswered, journal.responses.length)})`,
    `  recovery settled every purchase and delivery in ${(settleMs / 1000).toFixed(1)} s after the load stopped`,
    '',
    'invariants:',
  );
  for (const check of checks) lines.push(`  ${check.ok ? 'ok  ' : 'FAIL'} ${check.name}: ${check.value}`);
  lines.push('', checks.every((check) => check.ok) ? 'all invariants hold' : 'INVARIANTS FAILED');
  console.log(lines.join('\n'));
}

try {
  process.exitCode = await main();
} catch (error) {
  console.error(`chaos run failed: ${(error as Error).stack ?? error}`);
  process.exitCode = 2;
}
