import { type Static, Type } from 'typebox';
import type { AuditChanges, AuditSource } from '../audit/index.ts';
import { CREATION_ORDER, fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction, isUniqueViolation, lockingRead } from '../db/transaction.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { CalendarDate, iso, isoOrNull, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import type { PoliciesTable, PolicyStatus, PolicyVersionsTable } from './compliance.table.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  changedKeys,
  containsText,
  fieldChanges,
  notFound,
  recordChange,
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

const POLICY_BODY_MAX = 200_000;

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
    body: Type.String({ description: 'The policy text, Markdown.' }),
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
        body: '# Access control\n\nAccess is granted on least privilege and reviewed every quarter.',
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
  body: Type.Optional(Text(POLICY_BODY_MAX, { description: 'The policy text, Markdown.' })),
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
    body: row.body,
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

/** The policy with this key (keys are unique in a workspace). */
export async function findPolicyByKey(
  { db }: ComplianceDeps,
  workspaceId: string,
  key: string,
): Promise<Policy | undefined> {
  const row = await findPolicyRow(db, workspaceId, { key });
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
    body: body.body ?? '',
    approved_at: body.approved_at ?? null,
    created_at: now.getTime(),
    updated_at: now.getTime(),
  };
}

/**
 * Idempotent on the key: a new key creates the policy (and its first draft version); an existing
 * one takes the fields sent (the others stay), so the same body twice changes nothing and
 * publishes nothing.
 */
export async function upsertPolicy(
  deps: ComplianceDeps,
  workspaceId: string,
  body: UpsertPolicyBody,
  source: AuditSource,
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
      update: (stored) => applyChanges(trx, deps, stored, body, source),
    });
    const policy = toPolicy(row);
    if (outcome === 'created') {
      await saveDraft(trx, deps, row);
      await recordChange(trx, deps, source, {
        workspaceId,
        type: 'policy.created',
        data: policy,
        target: policyTarget(row),
      });
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
  source: AuditSource,
): Promise<Result<Policy, ComplianceError>> {
  try {
    return await inTransaction(deps.db, async (trx) => {
      const existing = await lockPolicyRow(trx, workspaceId, { id });
      if (!existing) return err(notFound);
      const { row } = await applyChanges(trx, deps, existing, body, source);
      return ok(toPolicy(row));
    });
  } catch (error) {
    if (isUniqueViolation(error)) return err(keyTaken);
    throw error;
  }
}

const CONTENT = ['title', 'summary', 'body'] as const;

function policyTarget(row: PoliciesTable) {
  return { type: 'policy', id: row.id, label: row.title };
}

/** The audit trail keeps a body's size, not its text: the versions hold the text. */
function auditedChanges(existing: PoliciesTable, changes: Partial<PoliciesTable>): AuditChanges {
  const audited = fieldChanges(existing, changes);
  if (audited.body) {
    audited.body = { from: `${existing.body.length} characters`, to: `${changes.body?.length} characters` };
  }
  return audited;
}

/**
 * A change of title, summary or body goes into the current draft version (made when there is
 * none), and an approved or published policy becomes a draft again unless the request sets a
 * status itself.
 */
async function applyChanges(
  trx: Tx,
  deps: ComplianceDeps,
  existing: PoliciesTable,
  requested: UpdatePolicyBody,
  source: AuditSource,
): Promise<{ row: PoliciesTable; changed: boolean }> {
  const keys = changedKeys(existing, requested);
  if (keys.length === 0) return { row: existing, changed: false };
  const changes: Partial<PoliciesTable> = { ...requested };
  const contentChanged = keys.some((key) => (CONTENT as readonly string[]).includes(key));
  if (
    contentChanged &&
    requested.status === undefined &&
    ['approved', 'published'].includes(existing.status)
  ) {
    changes.status = 'draft';
  }
  const row: PoliciesTable = { ...existing, ...changes, updated_at: deps.clock.now().getTime() };
  const { id, workspace_id, created_at, ...columns } = row;
  await trx
    .updateTable('policies')
    .set(columns)
    .where('workspace_id', '=', workspace_id)
    .where('id', '=', id)
    .execute();
  if (contentChanged) await saveDraft(trx, deps, row);
  await recordChange(trx, deps, source, {
    workspaceId: workspace_id,
    type: 'policy.updated',
    data: toPolicy(row),
    target: policyTarget(row),
    changes: auditedChanges(existing, changes),
  });
  return { row, changed: true };
}

function draftOf(db: Db, policy: PoliciesTable) {
  return db
    .selectFrom('policy_versions')
    .selectAll()
    .where('workspace_id', '=', policy.workspace_id)
    .where('policy_id', '=', policy.id)
    .where('status', '=', 'draft')
    .executeTakeFirst();
}

async function latestApproved(db: Db, workspaceId: string, policyId: string) {
  return db
    .selectFrom('policy_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('policy_id', '=', policyId)
    .where('status', '=', 'approved')
    .orderBy('number', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/** Writes the policy's content into its draft version, numbered after the last approved one. */
async function saveDraft(trx: Tx, deps: ComplianceDeps, policy: PoliciesTable): Promise<PolicyVersionsTable> {
  const now = deps.clock.now();
  const content = {
    title: policy.title,
    summary: policy.summary,
    body: policy.body,
    updated_at: now.getTime(),
  };
  const draft = await draftOf(trx, policy);
  if (draft) {
    await trx.updateTable('policy_versions').set(content).where('id', '=', draft.id).execute();
    return { ...draft, ...content };
  }
  const approved = await latestApproved(trx, policy.workspace_id, policy.id);
  const created: PolicyVersionsTable = {
    id: newId('pv', now),
    workspace_id: policy.workspace_id,
    policy_id: policy.id,
    number: (approved?.number ?? 0) + 1,
    status: 'draft',
    ...content,
    approved_at: null,
    approved_by: null,
    created_at: now.getTime(),
  };
  await trx.insertInto('policy_versions').values(created).execute();
  return created;
}

const VERSION_EXAMPLE = {
  number: 1,
  status: 'approved',
  title: 'Access Control Policy',
  summary: null,
  approved_at: '2026-02-15T14:00:00.000Z',
  approved_by: 'ada@example.com',
  created_at: '2026-01-20T09:30:00.000Z',
  updated_at: '2026-02-15T14:00:00.000Z',
};

export const PolicyVersionSummary = Type.Object(
  {
    number: Type.Integer({
      minimum: 1,
      description: 'The version number; the policy `version` once approved.',
    }),
    status: Type.Enum(['draft', 'approved'], {
      description: 'draft: being edited (at most one, the highest number); approved: never changes again.',
    }),
    title: Type.String(),
    summary: Nullable(Type.String()),
    approved_at: Nullable(Timestamp),
    approved_by: Nullable(
      Type.String({ description: 'Who approved: an API key or a member, as the audit log names them.' }),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'A version of a policy, without its text.',
    examples: [VERSION_EXAMPLE],
  },
);
export type PolicyVersionSummary = Static<typeof PolicyVersionSummary>;

export const PolicyVersionDetail = Type.Object(
  {
    ...PolicyVersionSummary.properties,
    body: Type.String({ description: 'The text of this version, Markdown.' }),
  },
  {
    description: 'A version of a policy with its text.',
    examples: [{ ...VERSION_EXAMPLE, body: '# Access control\n\nLeast privilege.' }],
  },
);
export type PolicyVersionDetail = Static<typeof PolicyVersionDetail>;

function toVersionSummary(row: PolicyVersionsTable): PolicyVersionSummary {
  return {
    number: row.number,
    status: row.status,
    title: row.title,
    summary: row.summary,
    approved_at: isoOrNull(row.approved_at),
    approved_by: row.approved_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** The versions of a policy, oldest first; undefined when the policy is not the workspace's. */
export async function listPolicyVersions(
  { db }: ComplianceDeps,
  workspaceId: string,
  policyId: string,
  page: PageRequest,
): Promise<Page<PolicyVersionSummary> | undefined> {
  if (!(await findPolicyRow(db, workspaceId, { id: policyId }))) return undefined;
  const query = db
    .selectFrom('policy_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('policy_id', '=', policyId);
  const { rows, next } = await fetchPage(query, CREATION_ORDER, page);
  return { items: rows.map(toVersionSummary), next };
}

export async function getPolicyVersion(
  { db }: ComplianceDeps,
  workspaceId: string,
  policyId: string,
  number: number,
): Promise<PolicyVersionDetail | undefined> {
  const row = await db
    .selectFrom('policy_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('policy_id', '=', policyId)
    .where('number', '=', number)
    .executeTakeFirst();
  return row ? { ...toVersionSummary(row), body: row.body } : undefined;
}

/**
 * Who asks to approve: an API key may; in the app, an owner or admin may and a member may not.
 * The caller states which (the app knows the member's role; the workspace module owns it).
 */
export type PolicyApprover = { kind: 'api_key' } | { kind: 'member'; role: 'owner' | 'admin' | 'member' };

export type PolicyApprovalError =
  | ComplianceError
  /** The approver is a member who is neither owner nor admin. */
  | { code: 'not_allowed' }
  /** There is no draft: the current text is already the approved version. */
  | { code: 'nothing_to_approve' };

/**
 * Approves the current draft as its numbered version, for good: `version` becomes the number,
 * `status` approved and `approved_at` today. A policy with no version yet (made before versions
 * were kept) has its current text approved as version 1.
 */
export async function approvePolicy(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  approver: PolicyApprover,
  source: AuditSource,
): Promise<Result<Policy, PolicyApprovalError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockPolicyRow(trx, workspaceId, { id });
    if (!existing) return err(notFound);
    if (approver.kind === 'member' && approver.role === 'member') return err({ code: 'not_allowed' });
    let draft = await draftOf(trx, existing);
    if (!draft) {
      if (await latestApproved(trx, workspaceId, id)) return err({ code: 'nothing_to_approve' });
      draft = await saveDraft(trx, deps, existing);
    }
    const now = deps.clock.now();
    await trx
      .updateTable('policy_versions')
      .set({ status: 'approved', approved_at: now.getTime(), approved_by: source.actor.label })
      .where('id', '=', draft.id)
      .execute();
    const changes = {
      version: String(draft.number),
      status: 'approved' as const,
      approved_at: now.toISOString().slice(0, 10),
    };
    const row: PoliciesTable = { ...existing, ...changes, updated_at: now.getTime() };
    await trx
      .updateTable('policies')
      .set({ ...changes, updated_at: row.updated_at })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    const policy = toPolicy(row);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'policy.approved',
      data: policy,
      target: policyTarget(row),
      changes: fieldChanges(existing, changes),
    });
    return ok(policy);
  });
}

const ACKNOWLEDGEMENT_EXAMPLE = {
  policy_id: 'pol_06f1k2m3n4p5q6r7s8t9v0w1x2',
  version: 2,
  user_id: 'usr_06f1k2m3n4p5q6r7s8t9v0w1x2',
  acknowledged_at: '2026-02-16T08:00:00.000Z',
};

export const PolicyAcknowledgement = Type.Object(
  {
    policy_id: RecordId('pol'),
    version: Type.Integer({ minimum: 1 }),
    user_id: Type.String({ description: 'The account of the member who acknowledged.' }),
    acknowledged_at: Timestamp,
  },
  {
    description: "A member's acknowledgement that they read an approved version of a policy.",
    examples: [ACKNOWLEDGEMENT_EXAMPLE],
  },
);
export type PolicyAcknowledgement = Static<typeof PolicyAcknowledgement>;

export type AcknowledgementError = ComplianceError | { code: 'not_approved' };

/**
 * A member acknowledges the policy's latest approved version; acknowledging it again changes
 * nothing. Whether `userId` is a member is the caller's to know (the workspace module's).
 */
export async function acknowledgePolicy(
  deps: ComplianceDeps,
  workspaceId: string,
  policyId: string,
  userId: string,
  source: AuditSource,
): Promise<Result<PolicyAcknowledgement, AcknowledgementError>> {
  return inTransaction(deps.db, async (trx) => {
    const policy = await lockPolicyRow(trx, workspaceId, { id: policyId });
    if (!policy) return err(notFound);
    const approved = await latestApproved(trx, workspaceId, policyId);
    if (!approved) return err({ code: 'not_approved' });
    const row = {
      workspace_id: workspaceId,
      policy_id: policyId,
      version: approved.number,
      user_id: userId,
      acknowledged_at: deps.clock.now().getTime(),
    };
    const inserted = await trx
      .insertInto('policy_acknowledgements')
      .values(row)
      .onConflict((oc) => oc.columns(['policy_id', 'version', 'user_id']).doNothing())
      .executeTakeFirst();
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) {
      const stored = await trx
        .selectFrom('policy_acknowledgements')
        .selectAll()
        .where('policy_id', '=', policyId)
        .where('version', '=', approved.number)
        .where('user_id', '=', userId)
        .executeTakeFirstOrThrow();
      return ok(toAcknowledgement(stored));
    }
    const acknowledgement = toAcknowledgement(row);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'policy.acknowledged',
      data: acknowledgement,
      target: policyTarget(policy),
    });
    return ok(acknowledgement);
  });
}

function toAcknowledgement(row: {
  policy_id: string;
  version: number;
  user_id: string;
  acknowledged_at: number;
}): PolicyAcknowledgement {
  return {
    policy_id: row.policy_id,
    version: row.version,
    user_id: row.user_id,
    acknowledged_at: iso(row.acknowledged_at),
  };
}

export const PolicyAcknowledgements = Type.Object(
  {
    version: Nullable(Type.Integer({ minimum: 1, description: 'The approved version; null before any.' })),
    data: Type.Array(PolicyAcknowledgement, {
      description: 'Acknowledgements of that version, oldest first.',
    }),
    pending_user_ids: Type.Array(Type.String(), {
      description: 'Members (accounts) who have not acknowledged that version yet.',
    }),
  },
  {
    description: 'Who has and has not acknowledged the approved version of a policy.',
    examples: [
      {
        version: 2,
        data: [ACKNOWLEDGEMENT_EXAMPLE],
        pending_user_ids: ['usr_06f1k2m3n4p5q6r7s8t9v0w1x3'],
      },
    ],
  },
);
export type PolicyAcknowledgements = Static<typeof PolicyAcknowledgements>;

/**
 * The acknowledgements of the latest approved version, and which of `memberUserIds` (the
 * workspace's members, from the workspace module) have not acknowledged it; undefined when the
 * policy is not the workspace's.
 */
export async function policyAcknowledgements(
  { db }: ComplianceDeps,
  workspaceId: string,
  policyId: string,
  memberUserIds: readonly string[],
): Promise<PolicyAcknowledgements | undefined> {
  if (!(await findPolicyRow(db, workspaceId, { id: policyId }))) return undefined;
  const approved = await latestApproved(db, workspaceId, policyId);
  if (!approved) return { version: null, data: [], pending_user_ids: [...memberUserIds] };
  const rows = await db
    .selectFrom('policy_acknowledgements')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('policy_id', '=', policyId)
    .where('version', '=', approved.number)
    .orderBy('acknowledged_at')
    .orderBy('user_id')
    .execute();
  const acknowledged = new Set(rows.map((row) => row.user_id));
  return {
    version: approved.number,
    data: rows.map(toAcknowledgement),
    pending_user_ids: memberUserIds.filter((userId) => !acknowledged.has(userId)),
  };
}
