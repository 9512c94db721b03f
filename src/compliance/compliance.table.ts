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

/** Written only by the triggers of migration 0018: moves with every write to a workspace's controls. */
export interface ControlsVersionsTable {
  workspace_id: string;
  version: number;
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
  status: RiskStatus;
  owner_id: string | null;
  created_at: number;
  updated_at: number;
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
  /** A calendar date, `YYYY-MM-DD`. */
  approved_at: string | null;
  created_at: number;
  updated_at: number;
}
