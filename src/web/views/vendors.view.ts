import type { Vendor, VendorRiskLevel, VendorStatus } from '../../compliance/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { Choice } from '../choices.ts';
import type { FieldError } from '../form-errors.ts';
import type { HistoryEntry } from '../history.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const VENDOR_STATUS_LABELS: Record<VendorStatus, string> = {
  prospective: 'Prospective',
  active: 'Active',
  under_review: 'Under review',
  offboarded: 'Offboarded',
};
export const VENDOR_RISK_LABELS: Record<VendorRiskLevel, string> = {
  low: 'Low',
  medium: 'Medium',
  high: 'High',
  critical: 'Critical',
};

const optionsOf = <Value extends string>(labels: Record<Value, string>) =>
  (Object.entries(labels) as [Value, string][]).map(([value, label]) => ({ value, label }));

export const VENDOR_STATUS_OPTIONS = optionsOf(VENDOR_STATUS_LABELS);
export const VENDOR_RISK_OPTIONS = optionsOf(VENDOR_RISK_LABELS);

/** How many days ahead a review counts as due. */
export const REVIEW_DUE_DAYS = 30;

export const VENDOR_FILTERS: readonly ListFilterField[] = [
  { name: 'q', label: 'Search', kind: 'search' },
  {
    name: 'status',
    label: 'Status',
    kind: 'select',
    allLabel: 'All statuses',
    options: VENDOR_STATUS_OPTIONS,
  },
  {
    name: 'risk_level',
    label: 'Risk level',
    kind: 'select',
    allLabel: 'Any risk level',
    options: VENDOR_RISK_OPTIONS,
  },
  { name: 'owner_id', label: 'Owner', kind: 'record', allLabel: 'Any owner', options: [] },
  {
    name: 'review',
    label: 'Review',
    kind: 'select',
    allLabel: 'Any review date',
    options: [
      { value: 'due', label: `Due within ${REVIEW_DUE_DAYS} days or overdue` },
      { value: 'overdue', label: 'Overdue' },
    ],
  },
];

/** Where a vendor's next review stands today. */
export type ReviewState = 'overdue' | 'due' | null;

/** A vendor as the pages show it: with its owner's name and whether its review is due. */
export type VendorRow = Vendor & { ownerName: string | null; review: ReviewState };

/** The values of the vendor form, as typed (so a refused form comes back as it was sent). */
export interface VendorForm {
  name: string;
  website: string;
  description: string;
  risk_level: string;
  status: string;
  owner_id: string;
  next_review_date: string;
}

export const EMPTY_VENDOR_FORM: VendorForm = {
  name: '',
  website: '',
  description: '',
  risk_level: 'medium',
  status: 'active',
  owner_id: '',
  next_review_date: '',
};

interface VendorPage {
  workspace: Workspace;
  canManage: boolean;
}

export interface VendorsView extends VendorPage {
  list: ListView<VendorRow>;
  statusLabels: Record<VendorStatus, string>;
  riskLabels: Record<VendorRiskLevel, string>;
  notice: string | undefined;
}

export interface VendorFormView extends VendorPage {
  form: VendorForm;
  people: Choice[];
  statuses: Choice[];
  riskLevels: Choice[];
  errors: FieldError[];
}

export interface VendorView extends VendorFormView {
  vendor: VendorRow;
  statusLabels: Record<VendorStatus, string>;
  riskLabels: Record<VendorRiskLevel, string>;
  history: HistoryEntry[];
  notice: string | undefined;
}

declare module '../render.ts' {
  interface PageViews {
    vendors: VendorsView;
    'vendor-new': VendorFormView;
    vendor: VendorView;
  }
}

export const VENDOR_FORM_CHOICES = { statuses: VENDOR_STATUS_OPTIONS, riskLevels: VENDOR_RISK_OPTIONS };
export const VENDOR_LABELS = { statusLabels: VENDOR_STATUS_LABELS, riskLabels: VENDOR_RISK_LABELS };

/**
 * Names for vendors' owners, and where each review stands: overdue before `today`, due before
 * `dueBefore` (whatever the status, as the REST API's `review_due_before` filter counts them).
 */
export function vendorRows(
  vendors: Vendor[],
  people: Choice[],
  today: string,
  dueBefore: string,
): VendorRow[] {
  const personNames = new Map(people.map((choice) => [choice.value, choice.label]));
  return vendors.map((vendor) => {
    const date = vendor.next_review_date;
    const review: ReviewState =
      date === null ? null : date < today ? 'overdue' : date < dueBefore ? 'due' : null;
    return {
      ...vendor,
      ownerName: vendor.owner_id ? (personNames.get(vendor.owner_id) ?? vendor.owner_id) : null,
      review,
    };
  });
}

export function vendorForm(vendor: Vendor): VendorForm {
  return {
    name: vendor.name,
    website: vendor.website ?? '',
    description: vendor.description ?? '',
    risk_level: vendor.risk_level,
    status: vendor.status,
    owner_id: vendor.owner_id ?? '',
    next_review_date: vendor.next_review_date ?? '',
  };
}

/** How the form's fields are refused: the REST API's rules, in the page's words. */
export const VENDOR_FIELD_ERRORS: Record<string, FieldError> = {
  name: { field: 'name', message: 'Give the vendor a name of at most 200 characters.' },
  website: {
    field: 'website',
    message: 'Enter the website as a full http or https address, like https://example.com.',
  },
  description: { field: 'description', message: 'Keep the description under 10,000 characters.' },
  risk_level: { field: 'risk_level', message: 'Choose a risk level from the list.' },
  status: { field: 'status', message: 'Choose a status from the list.' },
  owner_id: { field: 'owner_id', message: 'Choose the owner from the list.' },
  next_review_date: {
    field: 'next_review_date',
    message: 'Enter the review date as a date, like 2027-06-30.',
  },
};
