import {
  type Risk,
  type RiskSeverity,
  type RiskStatus,
  type RiskTreatment,
  severityOf,
} from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { Choice, ControlGroup } from '../choices.ts';
import type { FieldError } from '../form-errors.ts';
import { type HeatCell, IMPACT_LABELS, RATING_LABELS } from '../glance.ts';
import type { HistoryEntry } from '../history.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const TREATMENT_LABELS: Record<RiskTreatment, string> = {
  untreated: 'Untreated',
  mitigate: 'Mitigate',
  accept: 'Accept',
  transfer: 'Transfer',
  avoid: 'Avoid',
};
export const RISK_STATUS_LABELS: Record<RiskStatus, string> = { open: 'Open', closed: 'Closed' };
export const SEVERITY_LABELS: Record<RiskSeverity, string> = {
  low: 'Low',
  medium: 'Medium',
  high: 'High',
  critical: 'Critical',
};

const optionsOf = <Value extends string>(labels: Record<Value, string>) =>
  (Object.entries(labels) as [Value, string][]).map(([value, label]) => ({ value, label }));

export const TREATMENT_OPTIONS = optionsOf(TREATMENT_LABELS);
export const RISK_STATUS_OPTIONS = optionsOf(RISK_STATUS_LABELS);
const SEVERITY_OPTIONS = optionsOf(SEVERITY_LABELS);
/** The 1-5 ratings with their words: "3 (possible)". */
export const LIKELIHOOD_OPTIONS = [1, 2, 3, 4, 5].map((n) => ({
  value: String(n),
  label: `${n} (${RATING_LABELS[n]})`,
}));
export const IMPACT_OPTIONS = [1, 2, 3, 4, 5].map((n) => ({
  value: String(n),
  label: `${n} (${IMPACT_LABELS[n]})`,
}));

export const RISK_FILTERS: readonly ListFilterField[] = [
  { name: 'q', label: 'Search', kind: 'search' },
  {
    name: 'status',
    label: 'Status',
    kind: 'select',
    allLabel: 'Open and closed',
    options: RISK_STATUS_OPTIONS,
  },
  {
    name: 'severity',
    label: 'Severity',
    kind: 'select',
    allLabel: 'Any severity',
    options: SEVERITY_OPTIONS,
  },
  {
    name: 'treatment',
    label: 'Treatment',
    kind: 'select',
    allLabel: 'Any treatment',
    options: TREATMENT_OPTIONS,
  },
  {
    name: 'likelihood',
    label: 'Likelihood',
    kind: 'select',
    allLabel: 'Any likelihood',
    options: LIKELIHOOD_OPTIONS,
  },
  { name: 'impact', label: 'Impact', kind: 'select', allLabel: 'Any impact', options: IMPACT_OPTIONS },
  { name: 'owner_id', label: 'Owner', kind: 'record', allLabel: 'Any owner', options: [] },
  { name: 'control_id', label: 'Treated by control', kind: 'record', allLabel: 'Any control', options: [] },
];

/** A risk as the pages show it: with its owner's name, its controls' names and the residual score's band. */
export type RiskRow = Risk & {
  ownerName: string | null;
  controls: Choice[];
  residualSeverity: RiskSeverity | null;
};

/** The values of the risk form, as typed (so a refused form comes back as it was sent). */
export interface RiskForm {
  title: string;
  description: string;
  likelihood: string;
  impact: string;
  owner_id: string;
  treatment: string;
  treatment_plan: string;
  residual_likelihood: string;
  residual_impact: string;
  due_date: string;
  status: string;
  control_ids: string[];
}

export const EMPTY_RISK_FORM: RiskForm = {
  title: '',
  description: '',
  likelihood: '3',
  impact: '3',
  owner_id: '',
  treatment: 'untreated',
  treatment_plan: '',
  residual_likelihood: '',
  residual_impact: '',
  due_date: '',
  status: 'open',
  control_ids: [],
};

interface RiskPage {
  workspace: Workspace;
  canManage: boolean;
}

export interface RisksView extends RiskPage {
  list: ListView<RiskRow>;
  heat: HeatCell[][];
  openRiskCount: number;
  ratingLabels: typeof RATING_LABELS;
  impactLabels: typeof IMPACT_LABELS;
  treatmentLabels: Record<RiskTreatment, string>;
  severityLabels: Record<RiskSeverity, string>;
  notice: string | undefined;
}

export interface RiskFormView extends RiskPage {
  form: RiskForm;
  people: Choice[];
  controlGroups: ControlGroup[];
  likelihoods: Choice[];
  impacts: Choice[];
  treatments: Choice[];
  statuses: Choice[];
  errors: FieldError[];
}

export interface RiskView extends RiskFormView {
  risk: RiskRow;
  treatmentLabels: Record<RiskTreatment, string>;
  severityLabels: Record<RiskSeverity, string>;
  history: HistoryEntry[];
  notice: string | undefined;
}

declare module '../render.ts' {
  interface PageViews {
    risks: RisksView;
    'risk-new': RiskFormView;
    risk: RiskView;
  }
}

export const RISK_FORM_CHOICES = {
  likelihoods: LIKELIHOOD_OPTIONS,
  impacts: IMPACT_OPTIONS,
  treatments: TREATMENT_OPTIONS,
  statuses: RISK_STATUS_OPTIONS,
};

export const RISK_LABELS = { treatmentLabels: TREATMENT_LABELS, severityLabels: SEVERITY_LABELS };

/** Names for a risk's owner and controls, from the choices a page read anyway. */
export function riskRows(risks: Risk[], people: Choice[], controls: Choice[]): RiskRow[] {
  const personNames = new Map(people.map((choice) => [choice.value, choice.label]));
  const controlNames = new Map(controls.map((choice) => [choice.value, choice.label]));
  return risks.map((risk) => ({
    ...risk,
    ownerName: risk.owner_id ? (personNames.get(risk.owner_id) ?? risk.owner_id) : null,
    controls: risk.control_ids.map((id) => ({ value: id, label: controlNames.get(id) ?? id })),
    residualSeverity: risk.residual_score === null ? null : severityOf(risk.residual_score),
  }));
}

const textOf = (value: number | null) => (value === null ? '' : String(value));

export function riskForm(risk: Risk): RiskForm {
  return {
    title: risk.title,
    description: risk.description,
    likelihood: String(risk.likelihood),
    impact: String(risk.impact),
    owner_id: risk.owner_id ?? '',
    treatment: risk.treatment,
    treatment_plan: risk.treatment_plan ?? '',
    residual_likelihood: textOf(risk.residual_likelihood),
    residual_impact: textOf(risk.residual_impact),
    due_date: risk.due_date ?? '',
    status: risk.status,
    control_ids: risk.control_ids,
  };
}

/** How the form's fields are refused: the REST API's rules, in the page's words. */
export const RISK_FIELD_ERRORS: Record<string, FieldError> = {
  title: { field: 'title', message: 'Give the risk a title of at most 200 characters.' },
  description: { field: 'description', message: 'Keep the description under 10,000 characters.' },
  likelihood: { field: 'likelihood', message: 'Choose how likely the risk is, from 1 to 5.' },
  impact: { field: 'impact', message: 'Choose how bad it would be, from 1 to 5.' },
  owner_id: { field: 'owner_id', message: 'Choose the owner from the list.' },
  treatment: { field: 'treatment', message: 'Choose a treatment from the list.' },
  treatment_plan: { field: 'treatment_plan', message: 'Keep the treatment plan under 10,000 characters.' },
  residual_likelihood: {
    field: 'residual_likelihood',
    message: 'Choose the likelihood after treatment, from 1 to 5, or leave it not rated.',
  },
  residual_impact: {
    field: 'residual_impact',
    message: 'Choose the impact after treatment, from 1 to 5, or leave it not rated.',
  },
  due_date: { field: 'due_date', message: 'Enter the due date as a date, like 2026-12-31.' },
  status: { field: 'status', message: 'Choose open or closed.' },
  control_ids: { field: 'controls', message: 'Choose the controls from the list, at most 100.' },
};
