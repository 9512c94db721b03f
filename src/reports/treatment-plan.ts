import { type Static, Type } from 'typebox';
import { type TreatmentPlanRow, treatmentPlanRows } from '../compliance/index.ts';
import { canonicalJson } from '../shared/jcs.ts';
import { CalendarDate, Nullable, RecordId, Timestamp } from '../shared/wire.ts';
import { getWorkspace } from '../workspace/index.ts';
import type { ReportTable } from './documents.ts';
import type { SoaFileFormat } from './reports.table.ts';
import { type ReportFile, type ReportsDeps, renderReport, SOA_FILE_FORMATS, sha256Hex } from './soa.ts';

const Severity = Type.Enum(['low', 'medium', 'high', 'critical']);
const TREATMENT_NAMES = {
  untreated: 'Untreated',
  mitigate: 'Mitigate',
  accept: 'Accept',
  transfer: 'Transfer',
  avoid: 'Avoid',
} as const;

const RISK_EXAMPLE = {
  risk_id: 'rsk_06f1k2m3n4p5q6r7s8t9v0w1x2',
  title: 'Laptop theft exposes customer data',
  likelihood: 3,
  impact: 4,
  score: 12,
  severity: 'high',
  residual_likelihood: 1,
  residual_impact: 4,
  residual_score: 4,
  residual_severity: 'low',
  treatment: 'mitigate',
  treatment_plan: 'Full-disk encryption through device management.',
  owner_id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2',
  owner_name: 'Grace Hopper',
  due_date: '2026-12-31',
  controls: [{ id: 'ctl_06f1k2m3n4p5q6r7s8t9v0w1x2', reference: 'A.8.24', title: 'Use of cryptography' }],
} as const;

export const TreatmentPlanRisk = Type.Object(
  {
    risk_id: RecordId('rsk'),
    title: Type.String(),
    likelihood: Type.Integer({ minimum: 1, maximum: 5 }),
    impact: Type.Integer({ minimum: 1, maximum: 5 }),
    score: Type.Integer({ minimum: 1, maximum: 25, description: 'Before treatment: likelihood x impact.' }),
    severity: Severity,
    residual_likelihood: Nullable(Type.Integer({ minimum: 1, maximum: 5 })),
    residual_impact: Nullable(Type.Integer({ minimum: 1, maximum: 5 })),
    residual_score: Nullable(
      Type.Integer({ minimum: 1, maximum: 25, description: 'After treatment; null until rated.' }),
    ),
    residual_severity: Nullable(Severity),
    treatment: Type.Enum(['untreated', 'mitigate', 'accept', 'transfer', 'avoid']),
    treatment_plan: Nullable(Type.String()),
    owner_id: Nullable(RecordId('per')),
    owner_name: Nullable(Type.String()),
    due_date: Nullable(CalendarDate),
    controls: Type.Array(
      Type.Object({ id: RecordId('ctl'), reference: Type.String(), title: Type.String() }),
      { description: 'The Annex A controls that treat the risk, in Annex A order.' },
    ),
  },
  { description: 'An open risk as the risk treatment plan lists it.', examples: [RISK_EXAMPLE] },
);
export type TreatmentPlanRisk = Static<typeof TreatmentPlanRisk>;

export const TreatmentPlan = Type.Object(
  {
    generated_at: Timestamp,
    risks: Type.Array(TreatmentPlanRisk, { description: 'Every open risk, most severe first.' }),
  },
  {
    description: 'The risk treatment plan (ISO/IEC 27001 6.1.3 e), computed from the open risks now.',
    examples: [{ generated_at: '2026-03-05T11:00:00.000Z', risks: [RISK_EXAMPLE] }],
  },
);
export type TreatmentPlan = Static<typeof TreatmentPlan>;

function toPlanRisk(row: TreatmentPlanRow): TreatmentPlanRisk {
  return {
    risk_id: row.riskId,
    title: row.title,
    likelihood: row.likelihood,
    impact: row.impact,
    score: row.score,
    severity: row.severity,
    residual_likelihood: row.residualLikelihood,
    residual_impact: row.residualImpact,
    residual_score: row.residualScore,
    residual_severity: row.residualSeverity,
    treatment: row.treatment,
    treatment_plan: row.treatmentPlan,
    owner_id: row.ownerId,
    owner_name: row.ownerName,
    due_date: row.dueDate,
    controls: row.controls,
  };
}

export async function treatmentPlan(deps: ReportsDeps, workspaceId: string): Promise<TreatmentPlan> {
  return {
    generated_at: deps.clock.now().toISOString(),
    risks: (await treatmentPlanRows(deps, workspaceId)).map(toPlanRisk),
  };
}

const capitalised = (value: string) => `${value.charAt(0).toUpperCase()}${value.slice(1)}`;

function treatmentPlanCells(risk: TreatmentPlanRisk): (string | number | null)[] {
  return [
    risk.title,
    `${risk.score} ${capitalised(risk.severity)}`,
    risk.residual_score === null
      ? null
      : `${risk.residual_score} ${capitalised(risk.residual_severity ?? '')}`,
    TREATMENT_NAMES[risk.treatment],
    risk.treatment_plan,
    risk.owner_name,
    risk.due_date,
    risk.controls.map((control) => control.reference).join(', ') || null,
  ];
}

const PLAN_COLUMNS = [
  { header: 'Risk', width: 40, pdfWeight: 18 },
  { header: 'Score before', width: 14, pdfWeight: 8 },
  { header: 'Score after', width: 14, pdfWeight: 8 },
  { header: 'Treatment', width: 12, pdfWeight: 7 },
  { header: 'Plan', width: 60, pdfWeight: 27 },
  { header: 'Owner', width: 24, pdfWeight: 11 },
  { header: 'Due', width: 12, pdfWeight: 7 },
  { header: 'Controls', width: 30, pdfWeight: 14 },
];

/** The current risk treatment plan as a file; undefined when the workspace does not exist. */
export async function treatmentPlanFile(
  deps: ReportsDeps,
  workspaceId: string,
  format: SoaFileFormat,
): Promise<Buffer | undefined> {
  const table = await treatmentPlanTable(deps, workspaceId);
  return table && renderReport(table, format);
}

async function treatmentPlanTable(deps: ReportsDeps, workspaceId: string): Promise<ReportTable | undefined> {
  const workspace = await getWorkspace(deps.db, workspaceId);
  if (!workspace) return undefined;
  const plan = await treatmentPlan(deps, workspaceId);
  const at = deps.clock.now();
  return {
    title: 'Risk treatment plan',
    cover: [
      { label: 'Workspace', value: workspace.name },
      { label: 'Standard', value: 'ISO/IEC 27001:2022, clause 6.1.3 e' },
      { label: 'Generated', value: `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC` },
      { label: 'Open risks', value: String(plan.risks.length) },
      {
        label: 'SHA-256 of the content',
        value: sha256Hex(canonicalJson({ workspace: workspace.id, risks: plan.risks })),
      },
    ],
    columns: PLAN_COLUMNS,
    rows: plan.risks.map(treatmentPlanCells),
    footer: `Risk treatment plan · ${workspace.name}`,
    at,
  };
}

export async function treatmentPlanDocuments(deps: ReportsDeps, workspaceId: string): Promise<ReportFile[]> {
  const table = await treatmentPlanTable(deps, workspaceId);
  if (!table) return [];
  const files: ReportFile[] = [];
  for (const format of SOA_FILE_FORMATS) {
    files.push({ path: `risk-treatment-plan/current.${format}`, content: await renderReport(table, format) });
  }
  return files;
}
