/** Tables of the compliance module; every row belongs to one workspace (the API's organization). */

export type ControlStatus = 'not_started' | 'in_progress' | 'implemented' | 'not_applicable';
export type ControlTheme = 'organizational' | 'people' | 'physical' | 'technological';

export interface ControlsTable {
  id: string;
  workspace_id: string;
  /** `A.5.1`: the Annex A reference. */
  reference: string;
  title: string;
  theme: ControlTheme;
  /** Order of Annex A, which lists follow. */
  position: number;
  status: ControlStatus;
  owner_id: string | null;
  notes: string | null;
  /** Why the control is in or out of the Statement of Applicability; required for not_applicable. */
  justification: string | null;
  created_at: number;
  updated_at: number;
}

export type TaskStatus = 'open' | 'completed';

export interface TasksTable {
  id: string;
  workspace_id: string;
  title: string;
  description: string;
  status: TaskStatus;
  /** A calendar date, `YYYY-MM-DD`. */
  due_date: string | null;
  assignee_id: string | null;
  control_id: string | null;
  completed_at: number | null;
  created_at: number;
  updated_at: number;
}

export type EvidenceKind = 'link' | 'file';

export interface EvidenceTable {
  id: string;
  workspace_id: string;
  kind: EvidenceKind;
  title: string;
  url: string | null;
  file_name: string | null;
  file_size: number | null;
  file_sha256: string | null;
  /** Detected from the file's bytes, not taken from the upload. */
  content_type: string | null;
  /** The server-chosen file name under the data directory. */
  storage_key: string | null;
  /** When it was retired: kept with its file, hidden from lists unless asked for. */
  retired_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface EvidenceControlsTable {
  evidence_id: string;
  control_id: string;
  workspace_id: string;
  /** The evidence's `created_at`, so a control's evidence lists newest first from an index. */
  created_at: number;
}

export type RiskTreatment = 'untreated' | 'mitigate' | 'accept' | 'transfer' | 'avoid';
export type RiskStatus = 'open' | 'closed';

export interface RisksTable {
  id: string;
  workspace_id: string;
  title: string;
  description: string;
  likelihood: number;
  impact: number;
  /** likelihood x impact, kept as a column so "most severe first" can use an index. */
  score: number;
  treatment: RiskTreatment;
  /** How the treatment is carried out (ISO 27001 6.1.3). */
  treatment_plan: string | null;
  /** The rating expected once treated, 1-5 each. */
  residual_likelihood: number | null;
  residual_impact: number | null;
  /** A calendar date, `YYYY-MM-DD`: when the treatment is due. */
  due_date: string | null;
  status: RiskStatus;
  owner_id: string | null;
  created_at: number;
  updated_at: number;
}

/** The Annex A controls that treat a risk. */
export interface RiskControlsTable {
  risk_id: string;
  control_id: string;
  workspace_id: string;
}

export type VendorRiskLevel = 'low' | 'medium' | 'high' | 'critical';
export type VendorStatus = 'prospective' | 'active' | 'under_review' | 'offboarded';

export interface VendorsTable {
  id: string;
  workspace_id: string;
  name: string;
  website: string | null;
  description: string | null;
  risk_level: VendorRiskLevel;
  status: VendorStatus;
  owner_id: string | null;
  /** A calendar date, `YYYY-MM-DD`. */
  next_review_date: string | null;
  created_at: number;
  updated_at: number;
}

export type EmploymentStatus = 'current' | 'future' | 'former' | 'contractor';

export interface PeopleTable {
  id: string;
  workspace_id: string;
  /** Lower-cased; unique in the workspace. */
  email: string;
  name: string | null;
  title: string | null;
  department: string | null;
  employment_status: EmploymentStatus;
  /** A calendar date, `YYYY-MM-DD`: when the person left; only a former person has one. */
  left_on: string | null;
  created_at: number;
  updated_at: number;
}

export type PolicyStatus = 'draft' | 'in_review' | 'approved' | 'published' | 'archived';

export interface PoliciesTable {
  id: string;
  workspace_id: string;
  /** A slug, unique in the workspace; POST is idempotent on it. */
  key: string;
  title: string;
  version: string;
  status: PolicyStatus;
  summary: string | null;
  /** Markdown: the text being edited, which the current draft version holds too. */
  body: string;
  /** A calendar date, `YYYY-MM-DD`. */
  approved_at: string | null;
  created_at: number;
  updated_at: number;
}

export type PolicyVersionStatus = 'draft' | 'approved';

/** At most one draft per policy (the highest number); approved versions never change. */
export interface PolicyVersionsTable {
  id: string;
  workspace_id: string;
  policy_id: string;
  /** 1, 2, 3...: the draft holds the number its approval will give it. */
  number: number;
  status: PolicyVersionStatus;
  title: string;
  summary: string | null;
  body: string;
  approved_at: number | null;
  /** The approver's label as the audit log shows it (an account's email, an API key). */
  approved_by: string | null;
  created_at: number;
  updated_at: number;
}

/** A member's acknowledgement of one approved version; `user_id` is an account of `accounts/`. */
export interface PolicyAcknowledgementsTable {
  workspace_id: string;
  policy_id: string;
  version: number;
  user_id: string;
  acknowledged_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    people: PeopleTable;
    controls: ControlsTable;
    tasks: TasksTable;
    evidence: EvidenceTable;
    evidence_controls: EvidenceControlsTable;
    risks: RisksTable;
    risk_controls: RiskControlsTable;
    vendors: VendorsTable;
    policies: PoliciesTable;
    policy_versions: PolicyVersionsTable;
    policy_acknowledgements: PolicyAcknowledgementsTable;
  }
}
