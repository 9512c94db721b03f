import type {
  EmploymentStatus,
  PeopleImportResult,
  PeopleImportRow,
  Person,
} from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { FieldError } from '../form-errors.ts';
import type { HistoryEntry } from '../history.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const EMPLOYMENT_STATUS_LABELS: Record<EmploymentStatus, string> = {
  current: 'Current employee',
  future: 'Future (hired, not started)',
  former: 'Former (left)',
  contractor: 'Contractor',
};

export const EMPLOYMENT_STATUS_CHOICES = Object.entries(EMPLOYMENT_STATUS_LABELS).map(([value, label]) => ({
  value,
  label,
}));

export const PEOPLE_FILTERS: readonly ListFilterField[] = [
  {
    name: 'employment_status',
    label: 'Employment status',
    kind: 'select',
    allLabel: 'Everyone',
    options: EMPLOYMENT_STATUS_CHOICES,
  },
  { name: 'q', label: 'Search name or email', kind: 'search' },
];

/** The values of the person form, as typed (so a refused form comes back as it was sent). */
export interface PersonForm {
  email: string;
  name: string;
  title: string;
  department: string;
  employment_status: string;
}

export const EMPTY_PERSON_FORM: PersonForm = {
  email: '',
  name: '',
  title: '',
  department: '',
  employment_status: 'current',
};

interface PeoplePage {
  workspace: Workspace;
  canManage: boolean;
}

export interface PeopleView extends PeoplePage {
  list: ListView<Person>;
  statusLabels: Record<EmploymentStatus, string>;
  notice: string | undefined;
}

export interface PersonFormView extends PeoplePage {
  form: PersonForm;
  statuses: { value: string; label: string }[];
  errors: FieldError[];
}

export interface PersonView extends PersonFormView {
  person: Person;
  statusLabels: Record<EmploymentStatus, string>;
  /** The leaving date the "Mark as left" form shows: the person's, or today. */
  leftOn: string;
  leaveErrors: FieldError[];
  history: HistoryEntry[];
  notice: string | undefined;
}

/** An import row as the preview shows it: its changes named for people, values shown as text. */
export type ImportRowView = PeopleImportRow & {
  shownChanges: { field: string; from: string; to: string }[];
};

/** The import page: the upload form, then the preview of a file, then what applying it did. */
export interface PeopleImportView extends PeoplePage {
  stage: 'upload' | 'preview' | 'applied';
  errors: FieldError[];
  /** The file's text as base64, carried by the Apply form so exactly the previewed bytes are applied. */
  fileBase64: string;
  counts: PeopleImportResult['counts'];
  added: ImportRowView[];
  changed: ImportRowView[];
  refused: ImportRowView[];
  maxRows: number;
}

declare module '../render.ts' {
  interface PageViews {
    people: PeopleView;
    'person-new': PersonFormView;
    person: PersonView;
    'people-import': PeopleImportView;
  }
}

export function personForm(person: Person): PersonForm {
  return {
    email: person.email,
    name: person.name ?? '',
    title: person.title ?? '',
    department: person.department ?? '',
    employment_status: person.employment_status,
  };
}

const IMPORT_FIELD_NAMES: Record<string, string> = {
  email: 'Email',
  name: 'Name',
  title: 'Job title',
  department: 'Department',
  employment_status: 'Employment status',
  left_on: 'Left on',
};

function shownValue(field: string, value: string | null): string {
  if (value === null || value === '') return '—';
  if (field === 'employment_status') return EMPLOYMENT_STATUS_LABELS[value as EmploymentStatus] ?? value;
  return value;
}

export function importRowView(row: PeopleImportRow): ImportRowView {
  return {
    ...row,
    shownChanges: row.changes.map((change) => ({
      field: IMPORT_FIELD_NAMES[change.field] ?? change.field,
      from: shownValue(change.field, change.from),
      to: shownValue(change.field, change.to),
    })),
  };
}

/** How the person forms' fields are refused: the REST API's rules, in the page's words. */
export const PERSON_FIELD_ERRORS: Record<string, FieldError> = {
  email: { field: 'email', message: 'Enter an email address, like ada@example.com.' },
  name: { field: 'name', message: 'Keep the name to at most 200 characters.' },
  title: { field: 'title', message: 'Keep the job title to at most 200 characters.' },
  department: { field: 'department', message: 'Keep the department to at most 200 characters.' },
  employment_status: { field: 'employment_status', message: 'Choose the employment status from the list.' },
  left_on: { field: 'left_on', message: 'Enter the leaving date as a date, like 2026-11-30.' },
};
