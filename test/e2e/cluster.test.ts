// db-scope: both

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import pg from 'pg';
import { type Cluster, HAPROXY, startCluster } from '../../scripts/cluster/cluster.ts';
import { mintToken } from '../../scripts/cluster/sandbox.ts';
import { ATTEMPTS_PER_CLIENT } from '../../src/accounts/index.ts';

/** The 2.x client negotiates the 2026-07-28 protocol when the server offers it (its default is the 2025 handshake). */
const MODERN = { versionNegotiation: { mode: 'auto' as const } };

const run = promisify(execFile);
/**
 * The cluster always runs on PostgreSQL and Redis, whichever database the suite is on, so it runs
 * only in the suite's PostgreSQL run (TEST_DATABASE_URL; .ci/run runs it there), which creates the
 * cluster's own database through that connection: in the SQLite run it would repeat the same test.
 */
const ADMIN_URL = process.env.TEST_DATABASE_URL;

async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

/** The checkout surfaces' limit per client address and window, low so that a test reaches it. */
const ACP_LIMIT = 20;

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

/** A different address, and a proxy's, in front of the real one each time. */
function forged(attempt: number): string {
  return `203.0.113.${attempt % 250}, 127.0.0.1`;
}

const unavailable = !ADMIN_URL
  ? 'runs on PostgreSQL only: set TEST_DATABASE_URL'
  : !existsSync(HAPROXY)
    ? `no HAProxy at ${HAPROXY}`
    : !(await postgresReachable(ADMIN_URL))
      ? `no PostgreSQL at ${ADMIN_URL}`
      : false;

describe('the scale-out cluster (npm run cluster)', { skip: unavailable }, () => {
  // One cluster for every test: starting one takes most of the time.
  let started: Cluster | undefined;
  const cluster = () => {
    assert.ok(started, 'the cluster started');
    return started;
  };
  before(async () => {
    started = await startCluster({
      instances: 2,
      adminDatabaseUrl: ADMIN_URL,
      redisUrl: process.env.TEST_REDIS_URL,
      env: {
        LOG_LEVEL: 'warn',
        RATE_LIMIT_MAX: String(ACP_LIMIT),
        // Counts of its own, whatever else shares the machine's Redis.
        REDIS_KEY_PREFIX: `svc-cluster-test-${randomUUID()}:`,
      },
    });
  });
  after(() => started?.stop());

  it('balances instances on one database and survives a killed instance', async () => {
    const { url, sandboxUrl, pspSecretKey } = cluster();
    assert.deepEqual(new Set(await servedBy(url, 4)), new Set(['app1', 'app2']));
    const token = await mintToken(sandboxUrl, pspSecretKey);
    const bought = await acpPurchase(url, token);
    assert.equal(bought.status, 200);
    assert.match(bought.orderId ?? '', /^ord_/);

    await cluster().kill(0);
    assert.equal(cluster().instances[0]?.pid, undefined);
    // Connections refused by the dead instance are redispatched: no request fails.
    assert.deepEqual(new Set(await servedBy(url, 6)).has(''), false);
    assert.ok((await servedBy(url, 4)).every((server) => server === 'app2'));

    await cluster().start(0);
    await cluster().waitReady();
    const deadline = Date.now() + 20_000;
    while (!(await servedBy(url, 4)).includes('app1')) {
      assert.ok(Date.now() < deadline, 'the restarted instance is back in rotation');
    }
  });

  it('counts and records the address HAProxy saw, whatever X-Forwarded-For the client sends', async () => {
    const { url, databaseUrl } = cluster();
    const form = await fetch(`${url}/sign-in`, { headers: { accept: 'text/html' } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
    const cookie = form.headers
      .getSetCookie()
      .map((set) => set.split(';')[0])
      .join('; ');
    const guess = async (attempt: number) => {
      const response = await fetch(`${url}/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          accept: 'text/html',
          'content-type': 'application/x-www-form-urlencoded',
          origin: url,
          cookie,
          'x-forwarded-for': forged(attempt),
        },
        body: new URLSearchParams({
          _csrf: csrf,
          email: `guess${attempt}@example.com`,
          password: 'a wrong password',
        }),
      });
      await response.arrayBuffer();
      return response.status;
    };
    for (let attempt = 1; attempt <= ATTEMPTS_PER_CLIENT; attempt++) {
      assert.equal(await guess(attempt), 401, `guess ${attempt}`);
    }
    assert.equal(await guess(ATTEMPTS_PER_CLIENT + 1), 429, 'one client, however many addresses it forges');

    // A window that starts during the run restarts the count, so twice the limit is enough.
    const statuses: number[] = [];
    for (let attempt = 1; attempt <= 2 * ACP_LIMIT + 1 && !statuses.includes(429); attempt++) {
      const response = await fetch(`${url}/api/acp/checkout_sessions/cs_missing`, {
        headers: { 'x-forwarded-for': forged(attempt) },
      });
      await response.arrayBuffer();
      statuses.push(response.status);
    }
    assert.equal(statuses.at(-1), 429, `no 429 in ${statuses.join(', ')}`);
    assert.ok(statuses.slice(0, -1).every((status) => status === 404));

    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      const recorded = await client.query<{ ip: string | null; count: string }>(
        "select ip, count(*) from audit_events where action = 'account.sign_in_failed' group by ip",
      );
      assert.deepEqual(recorded.rows, [{ ip: '127.0.0.1', count: String(ATTEMPTS_PER_CLIENT) }]);
    } finally {
      await client.end();
    }
  });

  it('serves MCP tool calls on either instance through the balancer (stateless)', async () => {
    const { url, env } = cluster();
    const svc = async (...args: string[]) =>
      (await run('node', ['src/cli.ts', ...args], { env: { ...process.env, ...env } })).stdout;
    const workspace = JSON.parse(
      await svc('workspaces', 'create', '--email', 'mcp@example.com', '--plan', 'pro'),
    );
    const key = /svc_live_[0-9A-Za-z]{36}/.exec(
      await svc('api-keys', 'create', '--workspace', workspace.id),
    )?.[0];
    assert.ok(key);
    const client = new Client({ name: 'cluster-test', version: '1' }, MODERN);
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${key}` } },
      }),
    );
    try {
      assert.ok((await client.listTools()).tools.some((tool) => tool.name === 'createTask'));
      const created = await client.callTool({
        name: 'createTask',
        arguments: { body: { title: 'Via the balancer' } },
      });
      assert.equal(created.isError, undefined);
      const listed = await client.callTool({ name: 'listTasks', arguments: {} });
      assert.match(JSON.stringify(listed.content), /Via the balancer/);
    } finally {
      await client.close();
    }
    // Each call is one request any instance answers; both do.
    const servers = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const response = await fetch(`${url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'tools/call',
          params: { name: 'getMe', arguments: {} },
        }),
      });
      assert.equal(response.status, 200);
      assert.match(await response.text(), new RegExp(workspace.id));
      servers.add(response.headers.get('x-served-by') ?? '');
    }
    assert.deepEqual(servers, new Set(['app1', 'app2']));
  });

  it('stops everything it started and drops its database', async () => {
    const stopping = cluster();
    const databaseName = new URL(stopping.databaseUrl).pathname.slice(1);
    const pids = stopping.instances.map((instance) => instance.pid);
    await stopping.stop();
    assert.equal(await databaseExists(databaseName), false, 'the database is dropped');
    assert.equal(existsSync(stopping.dir), false, 'the temporary directory is removed');
    for (const pid of pids) assert.throws(() => process.kill(pid ?? 0, 0), /ESRCH/);
    await assert.rejects(fetch(`${stopping.url}/readyz`));
  });
});
