import type { Control, Evidence } from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { ControlGroup } from '../choices.ts';
import type { FieldError } from '../form-errors.ts';
import type { HistoryEntry } from '../history.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const EVIDENCE_KIND_OPTIONS = [
  { value: 'link', label: 'Links' },
  { value: 'file', label: 'Files' },
] as const;

/** Which evidence a list shows; the empty choice is the current evidence, as the REST API's default. */
export const EVIDENCE_SHOW_OPTIONS = [
  { value: 'retired', label: 'Retired only' },
  { value: 'all', label: 'Current and retired' },
] as const;

export const EVIDENCE_FILTERS: readonly ListFilterField[] = [
  { name: 'q', label: 'Search', kind: 'search' },
  { name: 'control_id', label: 'Control', kind: 'record', allLabel: 'All controls', options: [] },
  {
    name: 'kind',
    label: 'Kind',
    kind: 'select',
    allLabel: 'Links and files',
    options: EVIDENCE_KIND_OPTIONS,
  },
  { name: 'since', label: 'Added since', kind: 'date' },
  {
    name: 'show',
    label: 'Show',
    kind: 'select',
    allLabel: 'Current evidence',
    options: EVIDENCE_SHOW_OPTIONS,
  },
];

/** A linked control as evidence pages name it: its reference, title and page. */
export interface LinkedControl {
  id: string;
  reference: string;
  title: string;
}

/** Evidence as the pages show it: its controls named, its file's size in words. */
export type EvidenceRow = Evidence & { controls: LinkedControl[]; sizeLabel: string | null };

/** How full the plan's evidence storage is, in words. */
export interface StorageUse {
  used: string;
  limit: string;
}

interface EvidencePage {
  workspace: Workspace;
  canManage: boolean;
}

export interface EvidenceListView extends EvidencePage {
  list: ListView<EvidenceRow>;
  storage: StorageUse;
  notice: string | undefined;
}

/** The link form's values, as typed. */
export interface LinkForm {
  title: string;
  url: string;
  control_ids: string[];
}

export const EMPTY_LINK_FORM: LinkForm = { title: '', url: '', control_ids: [] };

export interface EvidenceNewView extends EvidencePage {
  controlGroups: ControlGroup[];
  link: LinkForm;
  /** The controls chosen in the upload form, when it comes back refused. */
  fileControlIds: string[];
  errors: FieldError[];
  /** Which of the two forms the errors belong to. */
  errorsOf: 'link' | 'files' | undefined;
  limits: { maxFileSize: string; maxFiles: number; maxControls: number; acceptedTypes: string };
  storage: StorageUse;
}

/** The evidence form's values, as typed. */
export interface EvidenceForm {
  title: string;
  control_ids: string[];
}

export interface EvidenceRecordView extends EvidencePage {
  evidence: EvidenceRow;
  form: EvidenceForm;
  controlGroups: ControlGroup[];
  downloadUrl: string | null;
  errors: FieldError[];
  history: HistoryEntry[];
  notice: string | undefined;
}

declare module '../render.ts' {
  interface PageViews {
    evidence: EvidenceListView;
    'evidence-new': EvidenceNewView;
    'evidence-record': EvidenceRecordView;
  }
}

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'] as const;

/** A size in bytes as people read it: "840 bytes", "1.5 MiB". */
export function sizeLabel(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1).replace(/\.0$/, '')} ${UNITS[unit]}`;
}

/** Names for evidence's controls, from the workspace's controls a page read anyway. */
export function evidenceRows(items: Evidence[], controls: readonly Control[]): EvidenceRow[] {
  const byId = new Map(controls.map((control) => [control.id, control]));
  return items.map((evidence) => ({
    ...evidence,
    controls: evidence.control_ids.map((id) => {
      const control = byId.get(id);
      return { id, reference: control?.reference ?? id, title: control?.title ?? '' };
    }),
    sizeLabel: evidence.file ? sizeLabel(evidence.file.size) : null,
  }));
}

export function evidenceForm(evidence: Evidence): EvidenceForm {
  return { title: evidence.title, control_ids: [...evidence.control_ids] };
}

/** How the evidence forms' fields are refused: the REST API's rules, in the page's words. */
export const EVIDENCE_FIELD_ERRORS: Record<string, FieldError> = {
  title: { field: 'title', message: 'Give the evidence a title of 1 to 200 characters.' },
  url: {
    field: 'url',
    message: 'Enter the link as a full http or https address, like https://wiki.example.com/page.',
  },
  control_ids: { field: 'controls', message: 'Choose the controls from the list.' },
};
