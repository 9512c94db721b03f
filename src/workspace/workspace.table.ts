import type { PlanId, TermLength } from '../catalog/index.ts';

export interface WorkspacesTable {
  id: string;
  name: string;
  plan: PlanId;
  created_at: number;
  updated_at: number;
}

/** One prepaid, non-renewing term; `ended_at` is set when the term-end sweep moves the workspace to Free. */
export interface WorkspaceTermsTable {
  id: string;
  workspace_id: string;
  plan: PlanId;
  term: TermLength;
  starts_at: number;
  ends_at: number;
  channel: string;
  order_id: string;
  ended_at: number | null;
  created_at: number;
}

export type TermNoticeKind = 'reminder_7_days' | 'reminder_1_day' | 'moved_to_free';

/** One email about a term's end, sent to the owners once: the key (term, kind) is unique. */
export interface TermNoticesTable {
  term_id: string;
  kind: TermNoticeKind;
  /** How many owners it went to (0 when the workspace had none to tell). */
  recipients: number;
  sent_at: number;
}

/** `auditor`: an external auditor's read-only access to one workspace, until `access_until`. */
export type MemberRole = 'owner' | 'admin' | 'member' | 'auditor';

export interface WorkspaceMembersTable {
  id: string;
  workspace_id: string;
  email: string;
  role: MemberRole;
  /** The account that accepted the invitation (null for members added before accounts existed). */
  user_id: string | null;
  /** When an auditor's access ends (epoch ms); null for the other roles. */
  access_until: number | null;
  created_at: number;
}

export interface WorkspaceInvitationsTable {
  id: string;
  workspace_id: string;
  email: string;
  role: MemberRole;
  /** SHA-256 of the token in the email link; the token itself is never stored. */
  token_hash: string;
  expires_at: number;
  accepted_at: number | null;
  /** Set when a newer invitation to the same address replaced this one. */
  revoked_at: number | null;
  /** Who invited (an owner or admin, in the app); null for a purchase's or the CLI's owner invitation. */
  invited_by_user_id: string | null;
  /**
   * Set when an owner or admin withdrew the invitation, or its member was removed or left: the
   * link then answers that, and cannot ask for a fresh one.
   */
  withdrawn_at: number | null;
  /** The access an auditor's invitation gives ends then (epoch ms); null for the other roles. */
  access_until: number | null;
  created_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    workspaces: WorkspacesTable;
    workspace_terms: WorkspaceTermsTable;
    term_notices: TermNoticesTable;
    workspace_members: WorkspaceMembersTable;
    workspace_invitations: WorkspaceInvitationsTable;
  }
}
