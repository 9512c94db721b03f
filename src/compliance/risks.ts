import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import { fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { CalendarDate, IdInput, iso, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import type { RiskStatus, RisksTable, RiskTreatment } from './compliance.table.ts';
import { MAX_CONTROL_LINKS } from './evidence-shapes.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  containsText,
  deleteRecord,
  fieldChanges,
  findWorkspaceRow,
  knownControlIds,
  lockWorkspaceRow,
  missingReference,
  notFound,
  recordChange,
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
const RESIDUAL_LIKELIHOOD = 'The likelihood expected once the treatment is carried out, 1-5.';
const RESIDUAL_IMPACT = 'The impact expected once the treatment is carried out, 1-5.';
const Score = (description: string) => Type.Integer({ minimum: 1, maximum: 25, description });

export const Risk = Type.Object(
  {
    id: RecordId('rsk'),
    title: Type.String(),
    description: Type.String(),
    likelihood: Rating(LIKELIHOOD),
    impact: Rating(IMPACT),
    score: Score('likelihood x impact; lists sort by it.'),
    severity: RiskSeveritySchema,
    treatment: RiskTreatmentSchema,
    treatment_plan: Nullable(Type.String({ description: 'How the treatment is carried out.' })),
    residual_likelihood: Nullable(Rating(RESIDUAL_LIKELIHOOD)),
    residual_impact: Nullable(Rating(RESIDUAL_IMPACT)),
    residual_score: Nullable(Score('residual_likelihood x residual_impact; null until both are rated.')),
    due_date: Nullable(CalendarDate),
    control_ids: Type.Array(RecordId('ctl'), {
      description: 'The Annex A controls that treat the risk, in Annex A order.',
    }),
    status: RiskStatusSchema,
    owner_id: Nullable(RecordId('per', 'The person who owns the risk (see /people).')),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description:
      'A risk of the register with its treatment plan (ISO 27001 6.1.3); score, severity and ' +
      'residual_score are derived from the ratings.',
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
        treatment_plan: 'Offboarding checklist names every tool; a monthly review catches the rest.',
        residual_likelihood: 1,
        residual_impact: 4,
        residual_score: 4,
        due_date: '2026-12-31',
        control_ids: ['ctl_06f1k2m3n4p5q6r7s8t9v0w1x2'],
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
  treatment_plan: Type.Optional(Nullable(Text(10_000, { description: 'How the treatment is carried out.' }))),
  residual_likelihood: Type.Optional(Nullable(Rating(RESIDUAL_LIKELIHOOD))),
  residual_impact: Type.Optional(Nullable(Rating(RESIDUAL_IMPACT))),
  due_date: Type.Optional(Nullable(CalendarDate)),
  status: Type.Optional(RiskStatusSchema),
  owner_id: Type.Optional(Nullable(IdInput('A person of the workspace, or null for no owner.'))),
  control_ids: Type.Optional(
    Type.Array(IdInput('A control of the workspace.'), {
      maxItems: MAX_CONTROL_LINKS,
      description: 'The controls that treat the risk; replaces the set, [] unlinks them all.',
    }),
  ),
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
        treatment_plan: 'Enforce full-disk encryption through device management.',
        residual_likelihood: 3,
        residual_impact: 1,
        due_date: '2026-12-31',
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
  q: Type.Optional(
    Text(200, { description: 'Matches part of the title or the description, case-insensitively.' }),
  ),
  status: Type.Optional(RiskStatusSchema),
  severity: Type.Optional(RiskSeveritySchema),
  treatment: Type.Optional(RiskTreatmentSchema),
  likelihood: Type.Optional(Rating('Only risks of this likelihood, 1-5.')),
  impact: Type.Optional(Rating('Only risks of this impact, 1-5.')),
  owner_id: Type.Optional(IdInput('Only risks owned by this person.')),
  control_id: Type.Optional(IdInput('Only risks this control treats.')),
});
export type RisksFilter = Static<typeof RisksFilter>;

/** The severity band of a likelihood x impact score (1-25). */
export function severityOf(score: number): RiskSeverity {
  const band = SEVERITY_BANDS.find((candidate) => score <= candidate.max) ?? SEVERITY_BANDS[3];
  return band.severity;
}

function toRisk(row: RisksTable, controlIds: string[]): Risk {
  return {
    id: row.id,
    title: row.title,
    description: row.description,
    likelihood: row.likelihood,
    impact: row.impact,
    score: row.score,
    severity: severityOf(row.score),
    treatment: row.treatment,
    treatment_plan: row.treatment_plan,
    residual_likelihood: row.residual_likelihood,
    residual_impact: row.residual_impact,
    residual_score:
      row.residual_likelihood === null || row.residual_impact === null
        ? null
        : row.residual_likelihood * row.residual_impact,
    due_date: row.due_date,
    control_ids: controlIds,
    status: row.status,
    owner_id: row.owner_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

/** Rows as the API shows them, each with its controls in id order (the order Annex A was seeded in). */
async function withControls(db: Db, workspaceId: string, rows: RisksTable[]): Promise<Risk[]> {
  const links = new Map<string, string[]>(rows.map((row) => [row.id, []]));
  if (rows.length > 0) {
    const linked = await db
      .selectFrom('risk_controls')
      .select(['risk_id', 'control_id'])
      .where('workspace_id', '=', workspaceId)
      .where('risk_id', 'in', [...links.keys()])
      .orderBy('control_id')
      .execute();
    for (const link of linked) links.get(link.risk_id)?.push(link.control_id);
  }
  return rows.map((row) => toRisk(row, links.get(row.id) ?? []));
}

async function insertLinks(trx: Tx, row: RisksTable, controlIds: readonly string[]): Promise<void> {
  if (controlIds.length === 0) return;
  await trx
    .insertInto('risk_controls')
    .values(controlIds.map((control_id) => ({ risk_id: row.id, control_id, workspace_id: row.workspace_id })))
    .execute();
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
  if (filter.treatment) query = query.where('treatment', '=', filter.treatment);
  if (filter.likelihood) query = query.where('likelihood', '=', filter.likelihood);
  if (filter.impact) query = query.where('impact', '=', filter.impact);
  if (filter.owner_id) query = query.where('owner_id', '=', filter.owner_id);
  if (filter.q) query = query.where(containsText(['title', 'description'], filter.q));
  if (filter.control_id) {
    const treated = db
      .selectFrom('risk_controls')
      .select('risk_id')
      .where('workspace_id', '=', workspaceId)
      .where('control_id', '=', filter.control_id);
    query = query.where('id', 'in', treated);
  }
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
  return { items: await withControls(db, workspaceId, rows), next };
}

/** How many open risks sit in one cell of the likelihood x impact matrix. */
export interface RiskCell {
  likelihood: number;
  impact: number;
  count: number;
}

/** The open risks counted by likelihood and impact, for a heat map; cells without a risk are left out. */
export async function countOpenRisksByRating(
  { db }: ComplianceDeps,
  workspaceId: string,
): Promise<RiskCell[]> {
  const rows = await db
    .selectFrom('risks')
    .select(['likelihood', 'impact', (eb) => eb.fn.countAll<number>().as('count')])
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'open')
    .groupBy(['likelihood', 'impact'])
    .execute();
  return rows.map((row) => ({ likelihood: row.likelihood, impact: row.impact, count: Number(row.count) }));
}

export async function getRisk(
  { db }: ComplianceDeps,
  workspaceId: string,
  id: string,
): Promise<Risk | undefined> {
  const row = await findWorkspaceRow(db, 'risks', workspaceId, id);
  return row ? (await withControls(db, workspaceId, [row]))[0] : undefined;
}

export async function createRisk(
  deps: ComplianceDeps,
  workspaceId: string,
  body: CreateRiskBody,
  source: AuditSource,
): Promise<Result<Risk, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const missing = await missingReference(trx, workspaceId, [
      { field: 'owner_id', kind: 'person', id: body.owner_id },
    ]);
    if (missing) return err(missing);
    const controls = await knownControlIds(trx, workspaceId, body.control_ids);
    if (!controls.ok) return controls;
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
      treatment_plan: body.treatment_plan ?? null,
      residual_likelihood: body.residual_likelihood ?? null,
      residual_impact: body.residual_impact ?? null,
      due_date: body.due_date ?? null,
      status: body.status ?? 'open',
      owner_id: body.owner_id ?? null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    };
    await trx.insertInto('risks').values(row).execute();
    await insertLinks(trx, row, controls.value);
    const risk = toRisk(row, controls.value);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'risk.created',
      data: risk,
      target: { type: 'risk', id: risk.id, label: risk.title },
    });
    return ok(risk);
  });
}

/**
 * A new likelihood or impact recomputes the score, and with it the severity; `control_ids`
 * replaces the linked controls. The audit event names each changed field, the controls as
 * `control_ids: {from, to}`.
 */
export async function updateRisk(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdateRiskBody,
  source: AuditSource,
): Promise<Result<Risk, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, 'risks', workspaceId, id);
    if (!existing) return err(notFound);
    const { control_ids: requestedControls, ...fields } = body;
    const missing = await missingReference(trx, workspaceId, [
      { field: 'owner_id', kind: 'person', id: fields.owner_id },
    ]);
    if (missing) return err(missing);
    const controls = await knownControlIds(trx, workspaceId, requestedControls);
    if (!controls.ok) return controls;
    const current = (await withControls(trx, workspaceId, [existing]))[0] as Risk;
    const relink = requestedControls !== undefined && controls.value.join() !== current.control_ids.join();
    const changes = fieldChanges(existing, fields);
    if (Object.keys(changes).length === 0 && !relink) return ok(current);
    const row: RisksTable = { ...existing, ...fields, updated_at: deps.clock.now().getTime() };
    row.score = row.likelihood * row.impact;
    const { id: _id, workspace_id: _workspace, created_at: _created, ...columns } = row;
    await trx
      .updateTable('risks')
      .set(columns)
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    if (relink) {
      await trx
        .deleteFrom('risk_controls')
        .where('workspace_id', '=', workspaceId)
        .where('risk_id', '=', id)
        .execute();
      await insertLinks(trx, row, controls.value);
      changes.control_ids = { from: current.control_ids, to: controls.value };
    }
    const risk = toRisk(row, relink ? controls.value : current.control_ids);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'risk.updated',
      data: risk,
      target: { type: 'risk', id: risk.id, label: risk.title },
      changes,
    });
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
