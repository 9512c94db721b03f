import Fastify from 'fastify';
import { sql } from 'kysely';
import { createApiKey } from '../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../src/audit/index.ts';
import { PLAN_ENTITLEMENTS } from '../src/catalog/index.ts';
import { encodeCursor } from '../src/db/cursor.ts';
import type { Db } from '../src/db/schema.ts';
import { inTransaction } from '../src/db/transaction.ts';
import type { Clock } from '../src/shared/clock.ts';
import { newId } from '../src/shared/ids.ts';
import { provisionWorkspace } from '../src/workspace/index.ts';
import { type LoadResult, load, ratio } from './harness.ts';
import { type BenchService, onBothDialects } from './purchase-harness.ts';

/** `BENCH_EVIDENCE_SIZES=` (empty) skips the evidence lists. */
const EVIDENCE_SIZES = (process.env.BENCH_EVIDENCE_SIZES ?? '1000,1000000')
  .split(',')
  .filter((size) => size !== '')
  .map(Number);

/**
 * Authenticated REST reads: `GET /api/v1/controls` through the whole app (rate limits, key lookup,
 * validation, serialization) against a bare Fastify route answering the same JSON from memory, in
 * the same run; then `GET /api/v1/evidence` at 1,000 and at 1,000,000 rows: the first page, and
 * the page after the middle row (what the hundredth page of a deep walk costs).
 */
export async function benchApiRead(): Promise<void> {
  liftPlanRateLimit();
  await onBothDialects('api-read', async (service) => {
    const { workspaceId, key } = await organizationWithKey(service);
    const headers = { authorization: `Bearer ${key}` };
    const reads: Record<string, unknown> = {};
    for (const path of ['/api/v1/me', '/api/v1/controls']) {
      reads[path] = await againstBareRoute(`${service.url}${path}`, headers);
    }
    const evidence: Record<string, unknown> = {};
    let rows = 0;
    for (const size of EVIDENCE_SIZES) {
      const inserted = Date.now();
      await insertEvidence(
        service.runtime.database.db,
        service.runtime.database.dialect,
        workspaceId,
        rows,
        size,
      );
      rows = size;
      const middle = await cursorAtMiddle(service.runtime.database.db, workspaceId, size);
      evidence[`rows_${size}`] = {
        insertSeconds: Math.round((Date.now() - inserted) / 100) / 10,
        firstPage: await load({ url: `${service.url}/api/v1/evidence`, headers, connections: 4 }),
        middlePage: await load({
          url: `${service.url}/api/v1/evidence?cursor=${encodeURIComponent(middle)}`,
          headers,
          connections: 4,
        }),
      };
    }
    return { ...reads, evidence };
  });
}

/** Rounds of bare then app, so that a change in the machine's load between them moves both. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/**
 * The app's route against a bare Fastify route answering the same JSON from memory, in the same
 * run, each load in a process of its own: `ROUNDS` alternating rounds, and the median of each
 * figure over the rounds (the ratio's median is of the per-round ratios).
 */
async function againstBareRoute(url: string, headers: Record<string, string>) {
  const response = await fetch(url, { headers });
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  const body = await response.text();
  const path = new URL(url).pathname;
  const bare = Fastify();
  bare.get(path, async (_request, reply) => reply.type('application/json').send(body));
  const bareUrl = await bare.listen({ host: '127.0.0.1', port: 0 });
  try {
    const rounds: { app: LoadResult; bare: LoadResult }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const bareResult = await load({ url: `${bareUrl}${path}` });
      rounds.push({ bare: bareResult, app: await load({ url, headers }) });
    }
    const median = (values: number[]) => values.sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? 0;
    const summary = (side: 'app' | 'bare') => ({
      requestsPerSecond: median(rounds.map((r) => r[side].requestsPerSecond)),
      p50Ms: median(rounds.map((r) => r[side].p50Ms)),
      p99Ms: median(rounds.map((r) => r[side].p99Ms)),
    });
    return {
      app: summary('app'),
      bare: summary('bare'),
      ratio: median(rounds.map((r) => ratio(r.app, r.bare))),
      ratios: rounds.map((r) => ratio(r.app, r.bare)),
    };
  } finally {
    await bare.close();
  }
}

/**
 * The enterprise plan allows 1,200 requests a minute per key, which a load generator passes in a
 * second; the limiter still counts every request, only its ceiling is lifted for the benchmark.
 */
function liftPlanRateLimit(): void {
  (PLAN_ENTITLEMENTS.enterprise as { apiRequestsPerMinute: number }).apiRequestsPerMinute = 1_000_000_000;
}

/** A workspace on the enterprise plan with an API key. */
export function organizationWithKey(service: BenchService): Promise<{ workspaceId: string; key: string }> {
  return workspaceWithKey(service.runtime.database.db, service.runtime.clock, service.url);
}

/** A workspace on the enterprise plan and a key of it, provisioned as the CLI does. */
export async function workspaceWithKey(
  db: Db,
  clock: Clock,
  baseUrl: string,
): Promise<{ workspaceId: string; key: string }> {
  const { workspace } = await inTransaction(db, (trx) =>
    provisionWorkspace(
      trx,
      {
        name: 'Bench Ltd',
        plan: 'enterprise',
        ownerEmail: 'bench@example.com',
        term: {
          term: 'year',
          startsAt: clock.now(),
          channel: 'operator',
          orderId: newId('opord', clock.now()),
        },
      },
      { clock, baseUrl },
    ),
  );
  const created = await createApiKey(
    db,
    clock,
    { workspaceId: workspace.id, name: 'bench' },
    OPERATOR_SOURCE,
  );
  if (!created.ok) throw new Error(`no bench key: ${created.error.code}`);
  return { workspaceId: workspace.id, key: created.value.key };
}

/** The cursor a client holds after reading the newer half of the workspace's evidence. */
async function cursorAtMiddle(db: Db, workspaceId: string, rows: number): Promise<string> {
  const row = await db
    .selectFrom('evidence')
    .select(['created_at', 'id'])
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .offset(Math.floor(rows / 2))
    .limit(1)
    .executeTakeFirstOrThrow();
  return encodeCursor([Number(row.created_at), row.id], { workspaceId, list: 'evidence', filter: {} });
}

/** Link evidence rows `from`..`to` (exclusive), one millisecond apart, generated inside the database. */
async function insertEvidence(db: Db, dialect: string, workspaceId: string, from: number, to: number) {
  const base = Date.now() - to;
  const id =
    dialect === 'postgres'
      ? sql`'evd_' || lpad(i::text, 26, '0')`
      : sql`'evd_' || substr('00000000000000000000000000' || i, -26)`;
  const batch = 100_000;
  for (let start = from; start < to; start += batch) {
    const end = Math.min(to, start + batch);
    await sql`
      insert into evidence (id, workspace_id, kind, title, url, created_at, updated_at)
      with recursive series(i) as (select cast(${start + 1} as integer) union all select i + 1 from series where i < ${end})
      select ${id}, ${workspaceId}, 'link', 'Evidence ' || i, 'https://evidence.example/' || i,
             cast(${base} as bigint) + i, cast(${base} as bigint) + i
      from series`.execute(db);
  }
  if (dialect === 'postgres') await sql`analyze evidence`.execute(db);
}
