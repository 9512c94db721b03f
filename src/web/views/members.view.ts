import type { Member, MemberRole, OpenInvitation, Workspace } from '../../workspace/index.ts';
import type { FieldError } from '../form-errors.ts';

/** A member as the list shows them: the address their account has now, and what the viewer may change. */
export type MemberRow = Member & {
  isSelf: boolean;
  manageable: boolean;
  lastOwner: boolean;
  roleChoices: readonly MemberRole[];
};

/** A pending invitation, with who sent it and whether the viewer may resend or revoke it. */
export type InvitationRow = OpenInvitation & { invitedBy: string | null; manageable: boolean };

/** The Members page: members, pending invitations (owners and admins), the invite and transfer forms. */
export interface MembersView {
  workspace: Workspace;
  role: MemberRole;
  canManage: boolean;
  members: MemberRow[];
  invitations: InvitationRow[];
  transferCandidates: MemberRow[];
  selfIsLastOwner: boolean;
  assignable: readonly MemberRole[];
  notice: string | undefined;
  formId: string;
  errors: FieldError[];
  form: { email: string; role: string };
}

declare module '../render.ts' {
  interface PageViews {
    members: MembersView;
  }
}
