import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { describe, it } from 'node:test';
import pg from 'pg';
import { HAPROXY, startCluster } from '../../scripts/cluster/cluster.ts';
import { mintToken } from '../../scripts/cluster/sandbox.ts';

const ADMIN_URL = process.env.CLUSTER_ADMIN_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

async function databaseExists(name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return (await client.query('select 1 from pg_database where datname = $1', [name])).rowCount === 1;
  } finally {
    await client.end();
  }
}

/** Who answered each of `count` requests through the balancer. */
async function servedBy(url: string, count: number): Promise<string[]> {
  const servers: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${url}/readyz`);
    await response.arrayBuffer();
    assert.equal(response.status, 200);
    servers.push(response.headers.get('x-served-by') ?? '');
  }
  return servers;
}

async function acpPurchase(url: string, token: string): Promise<{ status: number; orderId?: string }> {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${url}/api/acp/checkout_sessions${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify(body),
    });
    return {
      status: response.status,
      body: (await response.json()) as {
        id?: string;
        status?: string;
        order?: { id?: string };
      },
    };
  };
  const created = await post('', {
    line_items: [{ id: 'svc-pro-monthly' }],
    currency: 'usd',
    capabilities: {},
    buyer: { email: 'cluster.buyer@example.com' },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const completed = await post(`/${created.body.id}/complete`, {
    payment_data: { handler_id: 'psp_spt', instrument: { type: 'card', credential: { type: 'spt', token } } },
  });
  assert.equal(completed.body.status, 'completed', JSON.stringify(completed.body));
  return { status: completed.status, orderId: completed.body.order?.id };
}

const unavailable = !existsSync(HAPROXY)
  ? `no HAProxy at ${HAPROXY}`
  : !(await postgresReachable())
    ? `no PostgreSQL at ${ADMIN_URL}`
    : false;

describe('the scale-out cluster (npm run cluster)', { skip: unavailable }, () => {
  it('balances instances on one database, survives a killed instance, and cleans up after itself', async (t) => {
    const cluster = await startCluster({ instances: 2, env: { LOG_LEVEL: 'warn' } });
    t.after(() => cluster.stop());
    const databaseName = new URL(cluster.databaseUrl).pathname.slice(1);

    assert.deepEqual(new Set(await servedBy(cluster.url, 4)), new Set(['app1', 'app2']));
    const token = await mintToken(cluster.sandboxUrl, cluster.pspSecretKey);
    const bought = await acpPurchase(cluster.url, token);
    assert.equal(bought.status, 200);
    assert.match(bought.orderId ?? '', /^ord_/);

    await cluster.kill(0);
    assert.equal(cluster.instances[0]?.pid, undefined);
    // Connections refused by the dead instance are redispatched: no request fails.
    assert.deepEqual(new Set(await servedBy(cluster.url, 6)).has(''), false);
    assert.ok((await servedBy(cluster.url, 4)).every((server) => server === 'app2'));

    await cluster.start(0);
    await cluster.waitReady();
    const deadline = Date.now() + 20_000;
    while (!(await servedBy(cluster.url, 4)).includes('app1')) {
      assert.ok(Date.now() < deadline, 'the restarted instance is back in rotation');
    }

    const pids = cluster.instances.map((instance) => instance.pid);
    await cluster.stop();
    assert.equal(await databaseExists(databaseName), false, 'the database is dropped');
    assert.equal(existsSync(cluster.dir), false, 'the temporary directory is removed');
    for (const pid of pids) assert.throws(() => process.kill(pid ?? 0, 0), /ESRCH/);
    await assert.rejects(fetch(`${cluster.url}/readyz`));
  });
});
