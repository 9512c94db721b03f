import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Db } from '../db/schema.ts';
import type { ModuleWiring } from '../jobs/index.ts';
import { DAY_MS, MINUTE_MS } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';

/**
 * Which instance holds a lease, and how long a silent one still counts as alive. Liveness is a
 * fact of wall-clock time between processes, so heartbeats and their checks read `Date.now()`
 * rather than the injectable clock that domain rules (expiry, terms) follow.
 */
export interface InstanceLiveness {
  /** This process's id, written into the leases it takes. */
  id: string;
  /** A heartbeat older than this means the instance is gone (killed, frozen, cut off). */
  goneAfterMs: number;
}

export interface RunningInstance extends InstanceLiveness {
  /** Stops the heartbeat and removes the row, so the instance's leases can be taken over at once. */
  stop(): Promise<void>;
}

/** Registers this process and keeps its heartbeat until `stop`. */
export async function startInstance(
  db: Db,
  options: { heartbeatMs: number; goneAfterMs: number },
): Promise<RunningInstance> {
  const now = Date.now();
  const id = newId('inst', new Date(now));
  await db.insertInto('service_instances').values({ id, started_at: now, heartbeat_at: now }).execute();
  let beating = Promise.resolve();
  const timer = setInterval(() => {
    beating = beating
      .then(() => heartbeat(db, id))
      // A missed beat is not fatal: the next one catches up, and being thought gone for a moment
      // only lets a retry repeat a charge under the same provider idempotency key.
      .catch(() => undefined);
  }, options.heartbeatMs);
  timer.unref();
  return {
    id,
    goneAfterMs: options.goneAfterMs,
    async stop() {
      clearInterval(timer);
      await beating;
      // A database already closed or unreachable keeps the row; its heartbeat's age tells the rest.
      await db
        .deleteFrom('service_instances')
        .where('id', '=', id)
        .execute()
        .catch(() => undefined);
    },
  };
}

async function heartbeat(db: Db, id: string): Promise<void> {
  const now = Date.now();
  const result = await db
    .updateTable('service_instances')
    .set({ heartbeat_at: now })
    .where('id', '=', id)
    .executeTakeFirst();
  // Removed by an operator or a clean-up while still running: announce this instance again.
  if (result.numUpdatedRows === 0n) {
    await db
      .insertInto('service_instances')
      .values({ id, started_at: now, heartbeat_at: now })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }
}

/**
 * True where the lease holder named in `column` is known gone: it named an instance, and that
 * instance has no heartbeat after `freshSince` (or no row at all: it stopped or was removed).
 * `freshSince` is `heartbeatsFreshSince`'s, or a prepared query's stand-in for it.
 */
export function holderGone(column: string, freshSince: number): RawBuilder<SqlBool> {
  const holder = sql.ref(column);
  return sql<SqlBool>`(${holder} is not null and not exists (select 1 from service_instances where service_instances.id = ${holder} and service_instances.heartbeat_at > ${freshSince}))`;
}

/** The oldest heartbeat of an instance still alive, by this process's wall clock (as heartbeats are written). */
export function heartbeatsFreshSince(goneAfterMs: number): number {
  return Date.now() - goneAfterMs;
}

/** Whether `instanceId` is known gone; false for a lease that names no instance. */
export async function isInstanceGone(
  db: Db,
  instanceId: string | null,
  goneAfterMs: number,
): Promise<boolean> {
  if (instanceId === null) return false;
  const row = await db
    .selectFrom('service_instances')
    .select('heartbeat_at')
    .where('id', '=', instanceId)
    .executeTakeFirst();
  return row === undefined || row.heartbeat_at <= heartbeatsFreshSince(goneAfterMs);
}

/** Forgets instances silent for a day (their leases were long taken over or expired). */
async function deleteSilentInstances(db: Db, olderThanMs: number): Promise<number> {
  const result = await db
    .deleteFrom('service_instances')
    .where('heartbeat_at', '<', Date.now() - olderThanMs)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Deletes the rows of instances silent for a day (a process that died without stopping). */
export function instancesWiring(db: Db): ModuleWiring {
  return {
    sweeps: [
      {
        name: 'instances.delete-silent',
        intervalMs: 60 * MINUTE_MS,
        run: async () => void (await deleteSilentInstances(db, DAY_MS)),
      },
    ],
  };
}
