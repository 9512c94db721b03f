import type { ControlStatus, ControlTheme, RiskSeverity, RiskTreatment } from '../../compliance/index.ts';
import type { Soa, SoaChange, SoaVersionSummary, TreatmentPlan } from '../../reports/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import { STATUS_LABELS, THEME_LABELS } from '../glance.ts';
import { SEVERITY_LABELS, TREATMENT_LABELS } from './risks.view.ts';

const FIELD_LABELS: Record<SoaChange['changes'][number]['field'], string> = {
  title: 'Title',
  applicable: 'Applicable',
  justification: 'Justification',
  status: 'Implementation status',
  owner_name: 'Owner',
  evidence_count: 'Evidence',
  latest_evidence_at: 'Latest evidence',
};

/** A changed field as the page words it: "Implementation status: In progress → Implemented". */
export interface ChangeLine {
  reference: string;
  title: string;
  field: string;
  from: string;
  to: string;
}

function wordValue(field: string, value: string | number | boolean | null): string {
  if (value === null || value === '') return '—';
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  if (field === 'status') return STATUS_LABELS[value as ControlStatus] ?? String(value);
  if (field === 'latest_evidence_at') return String(value).slice(0, 10);
  return String(value);
}

export function changeLines(changes: SoaChange[]): ChangeLine[] {
  return changes.flatMap((control) =>
    control.changes.map((change) => ({
      reference: control.reference,
      title: control.title,
      field: FIELD_LABELS[change.field],
      from: wordValue(change.field, change.from),
      to: wordValue(change.field, change.to),
    })),
  );
}

export interface SoaView {
  workspace: Workspace;
  canManage: boolean;
  soa: Soa;
  versions: SoaVersionSummary[];
  changes: ChangeLine[];
  statusLabels: Record<ControlStatus, string>;
  themeLabels: Record<ControlTheme, string>;
  notice: string | undefined;
  /** Why the approval was refused, shown above the approve button. */
  refusal: string | undefined;
}

export interface TreatmentPlanView {
  workspace: Workspace;
  canManage: boolean;
  plan: TreatmentPlan;
  severityLabels: Record<RiskSeverity, string>;
  treatmentLabels: Record<RiskTreatment, string>;
}

declare module '../render.ts' {
  interface PageViews {
    soa: SoaView;
    'treatment-plan': TreatmentPlanView;
  }
}

export const SOA_VIEW_LABELS = { statusLabels: STATUS_LABELS, themeLabels: THEME_LABELS };
export const PLAN_VIEW_LABELS = { severityLabels: SEVERITY_LABELS, treatmentLabels: TREATMENT_LABELS };
