import { type InsertResult, type RawBuilder, type SqlBool, sql } from 'kysely';
import { type AuditChanges, type AuditSource, recordAuditEvent } from '../audit/index.ts';
import type { PlanLimitReached } from '../catalog/index.ts';
import type { Database, Db, Tx } from '../db/schema.ts';
import { inTransaction, lockingRead } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { type EventType, publishEvent } from '../webhooks/index.ts';

export interface ComplianceDeps {
  db: Db;
  clock: Clock;
}

/** What a change can run into besides success; the API turns each into a 404, 409, 403 or 400. */
export type ComplianceError =
  | { code: 'not_found' }
  /** A body names a person or control that is not in the workspace. */
  | { code: 'reference_not_found'; field: string; kind: 'person' | 'control' }
  /** A unique value (an email, a policy key) is taken by another record. */
  | { code: 'conflict'; field: string; message: string }
  /** A control set to not_applicable with no justification given or stored. */
  | { code: 'justification_required' }
  /** The workspace's plan allows no more (evidence storage). */
  | PlanLimitReached;

export const notFound = { code: 'not_found' } as const;

/**
 * True where any of `columns` contains `q`, case-insensitively; the wildcards of `q` itself are
 * escaped, with an explicit ESCAPE because SQLite has no default escape character.
 */
export function containsText(columns: readonly string[], q: string): RawBuilder<SqlBool> {
  const pattern = `%${q.toLowerCase().replace(/[\\%_]/g, (ch) => `\\${ch}`)}%`;
  const matches = columns.map((column) => sql`lower(${sql.ref(column)}) like ${pattern} escape '\\'`);
  return sql<SqlBool>`(${sql.join(matches, sql` or `)})`;
}

/**
 * The first id in `references` that is not a row of `kind` in the workspace; ids of another
 * workspace are as absent as ids that never existed.
 */
export async function missingReference(
  db: Db,
  workspaceId: string,
  references: { field: string; kind: 'person' | 'control'; id: string | null | undefined }[],
): Promise<ComplianceError | undefined> {
  const named = references.flatMap(({ id, ...reference }) =>
    id === null || id === undefined ? [] : [{ ...reference, id }],
  );
  const found = new Set<string>();
  // One query per kind, however many ids a body names (an evidence links up to 100 controls).
  for (const kind of new Set(named.map((reference) => reference.kind))) {
    const rows = await db
      .selectFrom(kind === 'person' ? 'people' : 'controls')
      .select('id')
      .where('workspace_id', '=', workspaceId)
      .where(
        'id',
        'in',
        named.filter((reference) => reference.kind === kind).map((reference) => reference.id),
      )
      .execute();
    for (const row of rows) found.add(`${kind}:${row.id}`);
  }
  const missing = named.find((reference) => !found.has(`${reference.kind}:${reference.id}`));
  return missing && { code: 'reference_not_found', field: missing.field, kind: missing.kind };
}

/**
 * The distinct control ids a body names, in id order (the order Annex A was seeded in), or the
 * first one that is not a control of the workspace (`field` is `control_ids/<index>`).
 */
export async function knownControlIds(
  db: Db,
  workspaceId: string,
  controlIds: readonly string[] = [],
): Promise<Result<string[], ComplianceError>> {
  const references = controlIds.map((id, index) => ({
    field: `control_ids/${index}`,
    kind: 'control' as const,
    id,
  }));
  const missing = await missingReference(db, workspaceId, references);
  return missing ? err(missing) : ok([...new Set(controlIds)].sort());
}

/** The compliance tables whose rows are records with an id, each of one workspace. */
type RecordTable = 'controls' | 'tasks' | 'evidence' | 'risks' | 'vendors' | 'people' | 'policies';

/** A record of the workspace by id; an id of another workspace is as absent as one that never existed. */
export async function findWorkspaceRow<T extends RecordTable>(
  db: Db,
  table: T,
  workspaceId: string,
  id: string,
): Promise<Database[T] | undefined> {
  const row = await workspaceRow(db, table, workspaceId, id).executeTakeFirst();
  return row as Database[T] | undefined;
}

/** The row, locked until the transaction ends: what an update reads before it writes (`lockingRead`). */
export async function lockWorkspaceRow<T extends RecordTable>(
  trx: Tx,
  table: T,
  workspaceId: string,
  id: string,
): Promise<Database[T] | undefined> {
  const row = await lockingRead(trx, workspaceRow(trx, table, workspaceId, id)).executeTakeFirst();
  return row as Database[T] | undefined;
}

function workspaceRow(db: Db, table: RecordTable, workspaceId: string, id: string) {
  return db.selectFrom(table).selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id);
}

/** The keys whose value in `changes` differs from `current` (undefined means "not given"). */
export function changedKeys<T extends object>(current: T, changes: Partial<T>): (keyof T)[] {
  return (Object.keys(changes) as (keyof T)[]).filter(
    (key) => changes[key] !== undefined && changes[key] !== current[key],
  );
}

/** What an upsert did: `unchanged` when the request matched the stored record. */
export type UpsertOutcome = 'created' | 'updated' | 'unchanged';

/**
 * Creates or updates the record a unique natural key (an email, a policy key) names, in the
 * caller's transaction. Two concurrent upserts of one new key both miss `find`; `insert` must do
 * nothing on a conflict with that key (ON CONFLICT DO NOTHING), so the unique constraint lets one
 * insert win and the other request updates the winner's row instead.
 */
export async function upsertByUniqueKey<Row>(steps: {
  find: () => Promise<Row | undefined>;
  create: () => Row;
  insert: (row: Row) => Promise<InsertResult>;
  /** Applies the request to the stored row: the row after, and whether anything changed. */
  update: (stored: Row) => Promise<{ row: Row; changed: boolean }>;
}): Promise<{ row: Row; outcome: UpsertOutcome }> {
  let stored = await steps.find();
  if (!stored) {
    const row = steps.create();
    const inserted = await steps.insert(row);
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) > 0n) return { row, outcome: 'created' };
    stored = await steps.find();
    if (!stored) throw new Error('the unique key was taken, yet no row has it');
  }
  const updated = await steps.update(stored);
  return { row: updated.row, outcome: updated.changed ? 'updated' : 'unchanged' };
}

const DELETABLE = {
  tasks: { type: 'task.deleted', target: 'task' },
  risks: { type: 'risk.deleted', target: 'risk' },
  vendors: { type: 'vendor.deleted', target: 'vendor' },
} as const;

/**
 * Deletes a record of the workspace, records who did and publishes its `*.deleted` event (`data`
 * is `{id}`), all in one transaction.
 */
export async function deleteRecord(
  deps: ComplianceDeps,
  source: AuditSource,
  table: keyof typeof DELETABLE,
  workspaceId: string,
  id: string,
): Promise<Result<{ id: string }, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, table, workspaceId, id);
    if (!existing) return err(notFound);
    await trx.deleteFrom(table).where('workspace_id', '=', workspaceId).where('id', '=', id).execute();
    const label = 'title' in existing ? existing.title : existing.name;
    const { type, target } = DELETABLE[table];
    await recordChange(trx, deps, source, {
      workspaceId,
      type,
      data: { id },
      target: { type: target, id, label },
    });
    return ok({ id });
  });
}

/** A change to a readiness record, as the audit log and the webhooks both tell it. */
export interface RecordChange {
  workspaceId: string;
  /** The webhook event, and the audit action of the same name. */
  type: EventType & `${'control' | 'task' | 'evidence' | 'risk' | 'vendor' | 'person' | 'policy'}.${string}`;
  /** The event's `data`: the record as the API shows it, or `{id}` for a deletion. */
  data: unknown;
  target: { type: string; id: string; label: string };
  changes?: AuditChanges;
}

/**
 * Records who changed a readiness record (from the app, the API or the CLI) and publishes its
 * webhook event, both in the transaction of the change: every door leaves the same trail.
 */
export async function recordChange(
  trx: Tx,
  deps: ComplianceDeps,
  source: AuditSource,
  change: RecordChange,
): Promise<void> {
  const at = deps.clock.now();
  await recordAuditEvent(trx, {
    workspaceId: change.workspaceId,
    actor: source.actor,
    action: change.type,
    target: change.target,
    ip: source.ip ?? null,
    userAgent: source.userAgent ?? null,
    ...(change.changes ? { changes: change.changes } : {}),
    at,
  });
  await publishEvent(trx, deps.clock, {
    workspaceId: change.workspaceId,
    type: change.type,
    data: change.data,
  });
}

/** The fields `changes` gives a new value, each from its current one: what an audited edit changed. */
export function fieldChanges<T extends object>(current: T, changes: Partial<T>): AuditChanges {
  const result: AuditChanges = {};
  for (const key of changedKeys(current, changes)) {
    result[String(key)] = { from: current[key] ?? null, to: changes[key] ?? null };
  }
  return result;
}
