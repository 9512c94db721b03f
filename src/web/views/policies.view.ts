import type { Policy, PolicyStatus, PolicyVersionSummary } from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { FieldError } from '../form-errors.ts';
import type { HistoryEntry } from '../history.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const POLICY_STATUS_LABELS: Record<PolicyStatus, string> = {
  draft: 'Draft',
  in_review: 'In review',
  approved: 'Approved',
  published: 'Published',
  archived: 'Archived',
};

export const POLICY_FILTERS: readonly ListFilterField[] = [
  {
    name: 'status',
    label: 'Status',
    kind: 'select',
    allLabel: 'All statuses',
    options: Object.entries(POLICY_STATUS_LABELS).map(([value, label]) => ({ value, label })),
  },
  { name: 'q', label: 'Search key or title', kind: 'search' },
];

/** The values of the policy form, as typed (so a refused form comes back as it was sent). */
export interface PolicyForm {
  key: string;
  title: string;
  summary: string;
  body: string;
}

export const EMPTY_POLICY_FORM: PolicyForm = { key: '', title: '', summary: '', body: '' };

interface PolicyPage {
  workspace: Workspace;
  canManage: boolean;
}

export interface PoliciesView extends PolicyPage {
  list: ListView<Policy>;
  statusLabels: Record<PolicyStatus, string>;
  notice: string | undefined;
}

export interface PolicyNewView extends PolicyPage {
  form: PolicyForm;
  errors: FieldError[];
}

/** A version's text, rendered from its Markdown (`renderMarkdown`: safe to output unescaped). */
export interface RenderedVersion {
  version: PolicyVersionSummary;
  html: string;
}

/** Who has read the approved version, by address; for owners and admins. */
export interface AcknowledgementsView {
  acknowledged: { email: string; at: string }[];
  pending: string[];
}

export interface PolicyView extends PolicyPage {
  policy: Policy;
  statusLabels: Record<PolicyStatus, string>;
  approved: RenderedVersion | null;
  /** The draft (saved, or a preview of the form as sent), when there is one. */
  draft: { number: number | null; html: string; unsaved: boolean } | null;
  versions: PolicyVersionSummary[];
  /** When the member acknowledged the approved version; null if they have not. */
  acknowledgedAt: string | null;
  acknowledgements: AcknowledgementsView | null;
  form: PolicyForm;
  errors: FieldError[];
  history: HistoryEntry[];
  notice: string | undefined;
}

export interface PolicyVersionView extends PolicyPage {
  policy: Policy;
  version: RenderedVersion;
}

declare module '../render.ts' {
  interface PageViews {
    policies: PoliciesView;
    'policy-new': PolicyNewView;
    policy: PolicyView;
    'policy-version': PolicyVersionView;
  }
}

export function policyForm(policy: Policy): PolicyForm {
  return { key: policy.key, title: policy.title, summary: policy.summary ?? '', body: policy.body };
}

/** How the policy form's fields are refused: the REST API's rules, in the page's words. */
export const POLICY_FIELD_ERRORS: Record<string, FieldError> = {
  key: {
    field: 'key',
    message: 'Give the policy a key of lowercase letters and digits joined by hyphens, like access-control.',
  },
  title: { field: 'title', message: 'Give the policy a title of at most 200 characters.' },
  summary: { field: 'summary', message: 'Keep the summary under 10,000 characters.' },
  body: { field: 'body', message: 'Keep the text under 200,000 characters.' },
};
