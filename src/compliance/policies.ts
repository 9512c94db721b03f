import { type Static, Type } from 'typebox';
import { CREATION_ORDER, fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction, isUniqueViolation, lockingRead } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { CalendarDate, iso, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import { publishEvent } from '../webhooks/index.ts';
import type { PoliciesTable, PolicyStatus } from './compliance.table.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  changedKeys,
  containsText,
  notFound,
  type UpsertOutcome,
  upsertByUniqueKey,
} from './shared.ts';

const POLICY_STATUSES = [
  'draft',
  'in_review',
  'approved',
  'published',
  'archived',
] as const satisfies readonly PolicyStatus[];
const PolicyStatusSchema = Type.Enum(POLICY_STATUSES, {
  description: 'draft, in_review, approved, published, or archived (policies are archived, not deleted).',
});

const PolicyKey = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: '^[a-z0-9]+(-[a-z0-9]+)*$',
  description:
    'A slug, unique in the workspace: lowercase letters and digits, words joined by single hyphens.',
  examples: ['access-control'],
});

const PolicyVersion = Type.String({
  minLength: 1,
  maxLength: 20,
  pattern: '^[0-9]+(\\.[0-9]+)*$',
  description: 'Numbers joined by dots, like 1.0 or 2.1.3.',
  examples: ['1.0'],
});

export const Policy = Type.Object(
  {
    id: RecordId('pol'),
    key: PolicyKey,
    title: Type.String(),
    version: PolicyVersion,
    status: PolicyStatusSchema,
    summary: Nullable(Type.String()),
    approved_at: Nullable(CalendarDate),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'An information security policy of the workspace.',
    examples: [
      {
        id: 'pol_06f1k2m3n4p5q6r7s8t9v0w1x2',
        key: 'access-control',
        title: 'Access Control Policy',
        version: '1.0',
        status: 'approved',
        summary: 'How access to systems and data is granted, reviewed and removed.',
        approved_at: '2026-02-15',
        created_at: '2026-01-20T09:30:00.000Z',
        updated_at: '2026-02-15T14:00:00.000Z',
      },
    ],
  },
);
export type Policy = Static<typeof Policy>;

const editable = {
  version: Type.Optional(PolicyVersion),
  status: Type.Optional(PolicyStatusSchema),
  summary: Type.Optional(Nullable(Text(10_000))),
  approved_at: Type.Optional(Nullable(CalendarDate)),
};

/** POST /policies: created if the key is new, otherwise the policy with that key is updated. */
export const UpsertPolicyBody = Type.Object(
  { key: PolicyKey, title: Text(200, { minLength: 1 }), ...editable },
  {
    additionalProperties: false,
    examples: [
      {
        key: 'access-control',
        title: 'Access Control Policy',
        version: '1.0',
        status: 'approved',
        approved_at: '2026-02-15',
      },
    ],
  },
);
export type UpsertPolicyBody = Static<typeof UpsertPolicyBody>;

export const UpdatePolicyBody = Type.Object(
  { key: Type.Optional(PolicyKey), title: Type.Optional(Text(200, { minLength: 1 })), ...editable },
  { additionalProperties: false, minProperties: 1, examples: [{ status: 'published' }] },
);
export type UpdatePolicyBody = Static<typeof UpdatePolicyBody>;

export const PoliciesFilter = Type.Object({
  q: Type.Optional(Text(200, { description: 'Matches part of the key or title, case-insensitively.' })),
  status: Type.Optional(PolicyStatusSchema),
});
export type PoliciesFilter = Static<typeof PoliciesFilter>;

function toPolicy(row: PoliciesTable): Policy {
  return {
    id: row.id,
    key: row.key,
    title: row.title,
    version: row.version,
    status: row.status,
    summary: row.summary,
    approved_at: row.approved_at,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function listPolicies(
  { db }: ComplianceDeps,
  workspaceId: string,
  filter: PoliciesFilter,
  page: PageRequest,
): Promise<Page<Policy>> {
  let query = db.selectFrom('policies').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.q) query = query.where(containsText(['key', 'title'], filter.q));
  const { rows, next } = await fetchPage(query, CREATION_ORDER, page);
  return { items: rows.map(toPolicy), next };
}

async function findPolicyRow(
  db: Db,
  workspaceId: string,
  by: { id: string } | { key: string },
): Promise<PoliciesTable | undefined> {
  return policyRow(db, workspaceId, by).executeTakeFirst();
}

/** The row an update reads before it writes, locked until the transaction ends (`lockingRead`). */
function lockPolicyRow(trx: Tx, workspaceId: string, by: { id: string } | { key: string }) {
  return lockingRead(trx, policyRow(trx, workspaceId, by)).executeTakeFirst();
}

function policyRow(db: Db, workspaceId: string, by: { id: string } | { key: string }) {
  const query = db.selectFrom('policies').selectAll().where('workspace_id', '=', workspaceId);
  return 'id' in by ? query.where('id', '=', by.id) : query.where('key', '=', by.key);
}

export async function getPolicy(
  { db }: ComplianceDeps,
  workspaceId: string,
  id: string,
): Promise<Policy | undefined> {
  const row = await findPolicyRow(db, workspaceId, { id });
  return row ? toPolicy(row) : undefined;
}

function newPolicyRow(now: Date, workspaceId: string, body: UpsertPolicyBody): PoliciesTable {
  return {
    id: newId('pol', now),
    workspace_id: workspaceId,
    key: body.key,
    title: body.title,
    version: body.version ?? '1.0',
    status: body.status ?? 'draft',
    summary: body.summary ?? null,
    body: '',
    approved_at: body.approved_at ?? null,
    created_at: now.getTime(),
    updated_at: now.getTime(),
  };
}

/**
 * Idempotent on the key: a new key creates the policy; an existing one takes the fields sent (the
 * others stay), so the same body twice changes nothing and publishes nothing.
 */
export async function upsertPolicy(
  deps: ComplianceDeps,
  workspaceId: string,
  body: UpsertPolicyBody,
): Promise<{ policy: Policy; outcome: UpsertOutcome }> {
  return inTransaction(deps.db, async (trx) => {
    const { row, outcome } = await upsertByUniqueKey<PoliciesTable>({
      find: () => lockPolicyRow(trx, workspaceId, { key: body.key }),
      create: () => newPolicyRow(deps.clock.now(), workspaceId, body),
      insert: (created) =>
        trx
          .insertInto('policies')
          .values(created)
          .onConflict((oc) => oc.columns(['workspace_id', 'key']).doNothing())
          .executeTakeFirst(),
      update: (stored) => applyChanges(trx, deps.clock, stored, body),
    });
    const policy = toPolicy(row);
    if (outcome === 'created') {
      await publishEvent(trx, deps.clock, { workspaceId, type: 'policy.created', data: policy });
    }
    return { policy, outcome };
  });
}

const keyTaken: ComplianceError = {
  code: 'conflict',
  field: 'key',
  message: 'Another policy of the workspace has this key.',
};

/** A new key must stay unique; the constraint decides, so two concurrent renames cannot both win. */
export async function updatePolicy(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdatePolicyBody,
): Promise<Result<Policy, ComplianceError>> {
  try {
    return await inTransaction(deps.db, async (trx) => {
      const existing = await lockPolicyRow(trx, workspaceId, { id });
      if (!existing) return err(notFound);
      const { row } = await applyChanges(trx, deps.clock, existing, body);
      return ok(toPolicy(row));
    });
  } catch (error) {
    if (isUniqueViolation(error)) return err(keyTaken);
    throw error;
  }
}

async function applyChanges(
  trx: Tx,
  clock: Clock,
  existing: PoliciesTable,
  changes: UpdatePolicyBody,
): Promise<{ row: PoliciesTable; changed: boolean }> {
  if (changedKeys(existing, changes).length === 0) return { row: existing, changed: false };
  const row: PoliciesTable = { ...existing, ...changes, updated_at: clock.now().getTime() };
  const { id, workspace_id, created_at, ...columns } = row;
  await trx
    .updateTable('policies')
    .set(columns)
    .where('workspace_id', '=', workspace_id)
    .where('id', '=', id)
    .execute();
  await publishEvent(trx, clock, { workspaceId: workspace_id, type: 'policy.updated', data: toPolicy(row) });
  return { row, changed: true };
}
