import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import { fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { IdInput, iso, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import { publishEvent } from '../webhooks/index.ts';
import type { RiskStatus, RisksTable, RiskTreatment } from './compliance.table.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  changedKeys,
  deleteRecord,
  findWorkspaceRow,
  lockWorkspaceRow,
  missingReference,
  notFound,
} from './shared.ts';

const RISK_TREATMENTS = [
  'untreated',
  'mitigate',
  'accept',
  'transfer',
  'avoid',
] as const satisfies readonly RiskTreatment[];
const RISK_STATUSES = ['open', 'closed'] as const satisfies readonly RiskStatus[];

/** Bands of the 1-25 score, the usual defaults of risk registers on a 5x5 matrix. */
const SEVERITY_BANDS = [
  { severity: 'low', min: 1, max: 4 },
  { severity: 'medium', min: 5, max: 9 },
  { severity: 'high', min: 10, max: 16 },
  { severity: 'critical', min: 17, max: 25 },
] as const;
export type RiskSeverity = (typeof SEVERITY_BANDS)[number]['severity'];

const RiskTreatmentSchema = Type.Enum(RISK_TREATMENTS);
const RiskStatusSchema = Type.Enum(RISK_STATUSES);
const RiskSeveritySchema = Type.Enum(
  SEVERITY_BANDS.map((band) => band.severity),
  { description: 'From the score: low 1-4, medium 5-9, high 10-16, critical 17-25.' },
);
const Rating = (description: string) => Type.Integer({ minimum: 1, maximum: 5, description });
const LIKELIHOOD = 'How likely the risk is to occur, 1 (rare) to 5 (almost certain).';
const IMPACT = 'How bad it would be, 1 (negligible) to 5 (severe).';

export const Risk = Type.Object(
  {
    id: RecordId('rsk'),
    title: Type.String(),
    description: Type.String(),
    likelihood: Rating(LIKELIHOOD),
    impact: Rating(IMPACT),
    score: Type.Integer({ minimum: 1, maximum: 25, description: 'likelihood x impact; lists sort by it.' }),
    severity: RiskSeveritySchema,
    treatment: RiskTreatmentSchema,
    status: RiskStatusSchema,
    owner_id: Nullable(RecordId('per', 'The person who owns the risk (see /people).')),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'A risk of the register; score and severity are derived from likelihood and impact.',
    examples: [
      {
        id: 'rsk_06f1k2m3n4p5q6r7s8t9v0w1x2',
        title: 'Leavers keep access to SaaS tools',
        description: 'Accounts are not always removed from every tool when people leave.',
        likelihood: 3,
        impact: 4,
        score: 12,
        severity: 'high',
        treatment: 'mitigate',
        status: 'open',
        owner_id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2',
        created_at: '2026-11-23T10:15:00.000Z',
        updated_at: '2026-11-23T10:15:00.000Z',
      },
    ],
  },
);
export type Risk = Static<typeof Risk>;

const editable = {
  description: Type.Optional(Text(10_000)),
  treatment: Type.Optional(RiskTreatmentSchema),
  status: Type.Optional(RiskStatusSchema),
  owner_id: Type.Optional(Nullable(IdInput('A person of the workspace, or null for no owner.'))),
};

export const CreateRiskBody = Type.Object(
  {
    title: Text(200, { minLength: 1 }),
    likelihood: Rating(LIKELIHOOD),
    impact: Rating(IMPACT),
    ...editable,
  },
  {
    additionalProperties: false,
    examples: [
      {
        title: 'Laptop theft exposes customer data',
        description: 'Unencrypted disks on staff laptops.',
        likelihood: 3,
        impact: 4,
        treatment: 'mitigate',
      },
    ],
  },
);
export type CreateRiskBody = Static<typeof CreateRiskBody>;

export const UpdateRiskBody = Type.Object(
  {
    title: Type.Optional(Text(200, { minLength: 1 })),
    likelihood: Type.Optional(Rating(LIKELIHOOD)),
    impact: Type.Optional(Rating(IMPACT)),
    ...editable,
  },
  { additionalProperties: false, minProperties: 1, examples: [{ likelihood: 2, treatment: 'mitigate' }] },
);
export type UpdateRiskBody = Static<typeof UpdateRiskBody>;

export const RisksFilter = Type.Object({
  status: Type.Optional(RiskStatusSchema),
  severity: Type.Optional(RiskSeveritySchema),
  owner_id: Type.Optional(IdInput('Only risks owned by this person.')),
});
export type RisksFilter = Static<typeof RisksFilter>;

/** The severity band of a likelihood x impact score (1-25). */
export function severityOf(score: number): RiskSeverity {
  const band = SEVERITY_BANDS.find((candidate) => score <= candidate.max) ?? SEVERITY_BANDS[3];
  return band.severity;
}

function toRisk(row: RisksTable): Risk {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    likelihood: row.likelihood,
    impact: row.impact,
    score: row.score,
    severity: severityOf(row.score),
    treatment: row.treatment,
    status: row.status,
    owner_id: row.owner_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** Most severe first; among equal scores the newest first, the id making the order total. */
export async function listRisks(
  { db }: ComplianceDeps,
  workspaceId: string,
  filter: RisksFilter,
  page: PageRequest,
): Promise<Page<Risk>> {
  let query = db.selectFrom('risks').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.owner_id) query = query.where('owner_id', '=', filter.owner_id);
  const band = SEVERITY_BANDS.find((candidate) => candidate.severity === filter.severity);
  if (band) query = query.where('score', '>=', band.min).where('score', '<=', band.max);
  const { rows, next } = await fetchPage(
    query,
    {
      direction: 'desc',
      columns: [
        { column: 'score', type: 'integer' },
        { column: 'id', type: 'string' },
      ],
    },
    page,
  );
  return { items: rows.map(toRisk), next };
}

export async function getRisk(
  { db }: ComplianceDeps,
  workspaceId: string,
  id: string,
): Promise<Risk | undefined> {
  const row = await findWorkspaceRow(db, 'risks', workspaceId, id);
  return row ? toRisk(row) : undefined;
}

export async function createRisk(
  deps: ComplianceDeps,
  workspaceId: string,
  body: CreateRiskBody,
): Promise<Result<Risk, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const missing = await missingReference(trx, workspaceId, [
      { field: 'owner_id', kind: 'person', id: body.owner_id },
    ]);
    if (missing) return err(missing);
    const now = deps.clock.now();
    const row: RisksTable = {
      id: newId('rsk', now),
      workspace_id: workspaceId,
      title: body.title,
      description: body.description ?? '',
      likelihood: body.likelihood,
      impact: body.impact,
      score: body.likelihood * body.impact,
      treatment: body.treatment ?? 'untreated',
      status: body.status ?? 'open',
      owner_id: body.owner_id ?? null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    };
    await trx.insertInto('risks').values(row).execute();
    const risk = toRisk(row);
    await publishEvent(trx, deps.clock, { workspaceId, type: 'risk.created', data: risk });
    return ok(risk);
  });
}

/** A new likelihood or impact recomputes the score, and with it the severity. */
export async function updateRisk(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdateRiskBody,
): Promise<Result<Risk, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, 'risks', workspaceId, id);
    if (!existing) return err(notFound);
    const missing = await missingReference(trx, workspaceId, [
      { field: 'owner_id', kind: 'person', id: body.owner_id },
    ]);
    if (missing) return err(missing);
    if (changedKeys(existing, body).length === 0) return ok(toRisk(existing));
    const row: RisksTable = { ...existing, ...body, updated_at: deps.clock.now().getTime() };
    row.score = row.likelihood * row.impact;
    const { id: _id, workspace_id: _workspace, created_at: _created, ...columns } = row;
    await trx
      .updateTable('risks')
      .set(columns)
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    const risk = toRisk(row);
    await publishEvent(trx, deps.clock, { workspaceId, type: 'risk.updated', data: risk });
    return ok(risk);
  });
}

export async function deleteRisk(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  source: AuditSource,
): Promise<Result<{ id: string }, ComplianceError>> {
  return deleteRecord(deps, source, 'risks', workspaceId, id);
}
