import {
  CONTROL_STATUSES,
  CONTROL_THEMES,
  type Control,
  type ControlStatus,
  type ControlTheme,
  type Person,
  type Risk,
  type Task,
} from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import { type Choice, personLabel } from '../choices.ts';
import type { FieldError } from '../form-errors.ts';
import { STATUS_LABELS, THEME_LABELS } from '../glance.ts';
import type { HistoryEntry } from '../history.ts';
import type { ListFilterField, ListView } from '../list-page.ts';
import type { EvidenceRow } from './evidence.view.ts';

export const STATUS_OPTIONS = CONTROL_STATUSES.map((value) => ({ value, label: STATUS_LABELS[value] }));
export const THEME_OPTIONS = CONTROL_THEMES.map((value) => ({ value, label: THEME_LABELS[value] }));

export const CONTROL_FILTERS: readonly ListFilterField[] = [
  { name: 'q', label: 'Search', kind: 'search' },
  { name: 'status', label: 'Status', kind: 'select', allLabel: 'All statuses', options: STATUS_OPTIONS },
  { name: 'theme', label: 'Theme', kind: 'select', allLabel: 'All themes', options: THEME_OPTIONS },
];

/** A control as a row of the list: with its owner's name, for the owner choice it shows. */
export type ControlRow = Control & { ownerName: string | null };

export interface ControlsView {
  workspace: Workspace;
  canManage: boolean;
  list: ListView<ControlRow>;
  /** The list's filters and page, which each row's form carries back (as `list_*`). */
  listState: Record<string, string>;
  people: Choice[];
  statuses: typeof STATUS_OPTIONS;
  themeLabels: Record<ControlTheme, string>;
  statusLabels: Record<ControlStatus, string>;
  notice: string | undefined;
  /** A refused change; `controlId` names the control whose page the refusal points to. */
  error: { code: string; message: string; controlId?: string } | undefined;
}

/** The values of the control form, as typed (so a refused form comes back as it was sent). */
export interface ControlForm {
  status: string;
  owner_id: string;
  notes: string;
  justification: string;
}

export interface ControlView {
  workspace: Workspace;
  canManage: boolean;
  control: ControlRow;
  form: ControlForm;
  people: Choice[];
  statuses: typeof STATUS_OPTIONS;
  themeLabels: Record<ControlTheme, string>;
  statusLabels: Record<ControlStatus, string>;
  /** Its current evidence, newest first, and whether there is more than the page shows. */
  evidence: EvidenceRow[];
  moreEvidence: boolean;
  /** The workspace's current evidence not linked to it yet: what the link form offers. */
  evidenceChoices: Choice[];
  openTasks: Task[];
  risks: Risk[];
  history: HistoryEntry[];
  errors: FieldError[];
  /** Which form the errors belong to. */
  errorsOf: 'control' | 'evidence' | undefined;
  notice: string | undefined;
}

declare module '../render.ts' {
  interface PageViews {
    controls: ControlsView;
    control: ControlView;
  }
}

export function controlRows(controls: Control[], people: Person[]): ControlRow[] {
  const names = new Map(people.map((person) => [person.id, personLabel(person)]));
  return controls.map((control) => ({
    ...control,
    ownerName: control.owner_id ? (names.get(control.owner_id) ?? control.owner_id) : null,
  }));
}

export const CONTROL_VIEW_LABELS = { themeLabels: THEME_LABELS, statusLabels: STATUS_LABELS };

export function controlForm(control: Control): ControlForm {
  return {
    status: control.status,
    owner_id: control.owner_id ?? '',
    notes: control.notes ?? '',
    justification: control.justification ?? '',
  };
}

/** How the control form's fields are refused: the REST API's rules, in the page's words. */
export const CONTROL_FIELD_ERRORS: Record<string, FieldError> = {
  status: { field: 'status', message: 'Choose a status from the list.' },
  owner_id: { field: 'owner_id', message: 'Choose the owner from the list.' },
  notes: { field: 'notes', message: 'Keep the notes under 10,000 characters.' },
  justification: { field: 'justification', message: 'Keep the justification under 10,000 characters.' },
};

export const JUSTIFICATION_REQUIRED: FieldError = {
  field: 'justification',
  message: 'Say why the control is not applicable before marking it so.',
};

/** The address of a control's page: its Annex A reference. */
export function controlPath(workspaceId: string, control: Pick<Control, 'reference'>): string {
  return `/w/${workspaceId}/controls/${control.reference}`;
}
