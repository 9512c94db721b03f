export {
  describeWorkspace,
  type InvitationRecord,
  type InvitationState,
  listWorkspaces,
  type TermRecord,
  type WorkspaceDetails,
  type WorkspaceSummary,
} from './directory.ts';
export { findWorkspaceOwner, type WorkspaceOwner } from './owner.ts';
export {
  type EndedTerm,
  endElapsedTerms,
  findWorkspaceByOrder,
  getWorkspace,
  INVITATION_LIFETIME_MS,
  type NewTerm,
  type Provisioned,
  type ProvisionInput,
  provisionWorkspace,
  type Term,
  type Workspace,
  type WorkspaceContext,
} from './service.ts';
export type { MemberRole } from './workspace.table.ts';
