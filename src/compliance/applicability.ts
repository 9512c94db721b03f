import type { Db } from '../db/schema.ts';
import type { ControlStatus, ControlTheme, RiskTreatment } from './compliance.table.ts';
import { ensureControls } from './controls.ts';
import { type RiskSeverity, severityOf } from './risks.ts';
import type { ComplianceDeps } from './shared.ts';

/**
 * What the Statement of Applicability says of one control, read from the controls, their owners
 * and the evidence linked to them. Only current evidence counts: retired evidence is kept on
 * record but no longer supports a control.
 */
export interface ApplicabilityRow {
  controlId: string;
  reference: string;
  title: string;
  theme: ControlTheme;
  status: ControlStatus;
  justification: string | null;
  ownerId: string | null;
  /** The owner's name, or their address when the directory has no name. */
  ownerName: string | null;
  evidenceCount: number;
  /** Epoch milliseconds: when the newest current evidence linked to the control was added. */
  latestEvidenceAt: number | null;
}

/** Every control of the workspace in Annex A order, with its owner and evidence: one query each. */
export async function applicabilityRows(
  deps: ComplianceDeps,
  workspaceId: string,
): Promise<ApplicabilityRow[]> {
  const { db } = deps;
  await ensureControls(deps, workspaceId);
  const controls = await db
    .selectFrom('controls')
    .leftJoin('people', (join) =>
      join
        .onRef('people.id', '=', 'controls.owner_id')
        .onRef('people.workspace_id', '=', 'controls.workspace_id'),
    )
    .select([
      'controls.id',
      'controls.reference',
      'controls.title',
      'controls.theme',
      'controls.status',
      'controls.justification',
      'controls.owner_id',
      'people.name as owner_name',
      'people.email as owner_email',
    ])
    .where('controls.workspace_id', '=', workspaceId)
    .orderBy('controls.position')
    .orderBy('controls.id')
    .execute();
  const evidence = await evidenceByControl(db, workspaceId);
  return controls.map((control) => {
    const linked = evidence.get(control.id);
    return {
      controlId: control.id,
      reference: control.reference,
      title: control.title,
      theme: control.theme,
      status: control.status,
      justification: control.justification,
      ownerId: control.owner_id,
      ownerName: control.owner_name || control.owner_email || null,
      evidenceCount: linked?.count ?? 0,
      latestEvidenceAt: linked?.latest ?? null,
    };
  });
}

async function evidenceByControl(
  db: Db,
  workspaceId: string,
): Promise<Map<string, { count: number; latest: number }>> {
  const rows = await db
    .selectFrom('evidence_controls')
    .innerJoin('evidence', 'evidence.id', 'evidence_controls.evidence_id')
    .select([
      'evidence_controls.control_id',
      (eb) => eb.fn.countAll<number>().as('count'),
      (eb) => eb.fn.max('evidence.created_at').as('latest'),
    ])
    .where('evidence_controls.workspace_id', '=', workspaceId)
    .where('evidence.workspace_id', '=', workspaceId)
    .where('evidence.retired_at', 'is', null)
    .groupBy('evidence_controls.control_id')
    .execute();
  return new Map(
    rows.map((row) => [row.control_id, { count: Number(row.count), latest: Number(row.latest) }]),
  );
}

/** One open risk as the risk treatment plan (ISO/IEC 27001 6.1.3 e) lists it. */
export interface TreatmentPlanRow {
  riskId: string;
  title: string;
  likelihood: number;
  impact: number;
  score: number;
  severity: RiskSeverity;
  residualLikelihood: number | null;
  residualImpact: number | null;
  residualScore: number | null;
  residualSeverity: RiskSeverity | null;
  treatment: RiskTreatment;
  treatmentPlan: string | null;
  ownerId: string | null;
  ownerName: string | null;
  dueDate: string | null;
  /** The Annex A controls that treat the risk, in Annex A order. */
  controls: { id: string; reference: string; title: string }[];
}

/** Every open risk of the workspace, most severe first (the order of the risk register). */
export async function treatmentPlanRows(
  { db }: ComplianceDeps,
  workspaceId: string,
): Promise<TreatmentPlanRow[]> {
  const risks = await db
    .selectFrom('risks')
    .leftJoin('people', (join) =>
      join.onRef('people.id', '=', 'risks.owner_id').onRef('people.workspace_id', '=', 'risks.workspace_id'),
    )
    .selectAll('risks')
    .select(['people.name as owner_name', 'people.email as owner_email'])
    .where('risks.workspace_id', '=', workspaceId)
    .where('risks.status', '=', 'open')
    .orderBy('risks.score', 'desc')
    .orderBy('risks.id', 'desc')
    .execute();
  const links = await db
    .selectFrom('risk_controls')
    .innerJoin('controls', 'controls.id', 'risk_controls.control_id')
    .select(['risk_controls.risk_id', 'controls.id', 'controls.reference', 'controls.title'])
    .where('risk_controls.workspace_id', '=', workspaceId)
    .where('controls.workspace_id', '=', workspaceId)
    .orderBy('controls.position')
    .execute();
  const controlsOf = new Map<string, TreatmentPlanRow['controls']>();
  for (const link of links) {
    const list = controlsOf.get(link.risk_id) ?? [];
    list.push({ id: link.id, reference: link.reference, title: link.title });
    controlsOf.set(link.risk_id, list);
  }
  return risks.map((risk) => {
    const residualScore =
      risk.residual_likelihood === null || risk.residual_impact === null
        ? null
        : risk.residual_likelihood * risk.residual_impact;
    return {
      riskId: risk.id,
      title: risk.title,
      likelihood: risk.likelihood,
      impact: risk.impact,
      score: risk.score,
      severity: severityOf(risk.score),
      residualLikelihood: risk.residual_likelihood,
      residualImpact: risk.residual_impact,
      residualScore,
      residualSeverity: residualScore === null ? null : severityOf(residualScore),
      treatment: risk.treatment,
      treatmentPlan: risk.treatment_plan,
      ownerId: risk.owner_id,
      ownerName: risk.owner_name || risk.owner_email || null,
      dueDate: risk.due_date,
      controls: controlsOf.get(risk.id) ?? [],
    };
  });
}
