export {
  AUDITOR_ACCESS_MAX_DAYS,
  AUDITORS_MAX,
  type Auditor,
  type AuditorChangeError,
  type AuditorInvitation,
  accessUntilOfDate,
  inviteAuditor,
  listAuditors,
  revokeAuditor,
  revokeAuditorInvitation,
} from './auditors.ts';
export {
  describeWorkspace,
  type InvitationRecord,
  listWorkspaces,
  type TermRecord,
  type WorkspaceDetails,
  type WorkspaceSummary,
} from './directory.ts';
export {
  type AcceptError,
  acceptInvitation,
  findInvitation,
  INVITATION_LIFETIME_MS,
  INVITATIONS_PER_ADDRESS_PER_HOUR,
  type Invitation,
  type InvitationStatus,
  type ResendError,
  resendInvitation,
} from './invitations.ts';
export { findWorkspacePlan, type LockedWorkspace, lockWorkspace } from './lock.ts';
export { memberAddressChanged } from './member-addresses.ts';
export {
  assignableRoles,
  canManageRole,
  canManageWorkspace,
  changeMemberRole,
  findMembership,
  hasAccess,
  inviteMember,
  leaveWorkspace,
  listMembers,
  listMemberships,
  listOpenInvitations,
  type Member,
  type MemberChangeError,
  type MemberInvitationInput,
  type Membership,
  type OpenInvitation,
  type OwnershipTransfer,
  type RemovedMember,
  type RoleChange,
  removeMember,
  resendMemberInvitation,
  revokeMemberInvitation,
  transferOwnership,
} from './members.ts';
export { findWorkspaceOwner, type WorkspaceOwner } from './owner.ts';
export {
  findPurchaseFollowUp,
  findPurchaseOwnerInvitation,
  type OwnerResendError,
  type PurchaseFollowUp,
  type PurchaseOwnerInvitation,
  resendPurchaseOwnerInvitation,
} from './owner-invitation.ts';
export {
  type AddedTerm,
  addPaidTerm,
  type EndedTerm,
  endElapsedTerms,
  findWorkspaceByOrder,
  getWorkspace,
  knownWorkspaceIds,
  type NewTerm,
  type PaidTermInput,
  type Provisioned,
  type ProvisionInput,
  paidTermStart,
  provisionWorkspace,
  type Term,
  type Workspace,
  type WorkspaceContext,
} from './service.ts';
export {
  parseWorkspaceName,
  type Rename,
  type RenameError,
  type Renamer,
  renameWorkspace,
  WORKSPACE_NAME_MAX,
  WORKSPACE_NAME_PATTERN,
  type WorkspaceNameError,
} from './settings.ts';
export { workspaceWiring } from './wiring.ts';
export type { MemberRole, TermNoticeKind } from './workspace.table.ts';
