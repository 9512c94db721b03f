import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { emailsOfUsers, type User } from '../../accounts/index.ts';
import {
  assignableRoles,
  canManageRole,
  canManageWorkspace,
  changeMemberRole,
  inviteMember,
  leaveWorkspace,
  listMembers,
  listOpenInvitations,
  type MemberChangeError,
  type MemberRole,
  type Membership,
  removeMember,
  resendMemberInvitation,
  revokeMemberInvitation,
  transferOwnership,
} from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { newFormId, onceForForm } from '../form-once.ts';
import { field } from '../forms.ts';
import { membershipFor } from '../guard.ts';
import { planLimitRefusal } from '../plan-limit.ts';
import { sendNotFound, sendView } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';
import { minutesUntil } from './sign-in.ts';

type Params = { Params: { workspaceId: string } };
type MemberParams = { Params: { workspaceId: string; memberId: string } };
type InvitationParams = { Params: { workspaceId: string; invitationId: string } };

const ROLES: readonly MemberRole[] = ['owner', 'admin', 'member'];

/** What a finished change says on the page it redirects to (`?notice=`): fixed texts, never an address. */
const NOTICES = {
  invited: 'Invitation sent. The link works once and for 7 days.',
  resent: 'Invitation sent again with a new link; the previous link no longer works.',
  revoked: 'Invitation revoked: its link no longer works.',
  role: 'Role changed.',
  removed: 'Member removed: they no longer have access to this workspace.',
  transferred: 'Ownership transferred.',
} as const;

type FormError = { field?: string; message: string };
type InviteForm = { email: string; role: string };

function membersUrl(workspaceId: string, notice?: keyof typeof NOTICES): string {
  return `/w/${workspaceId}/members${notice ? `?notice=${notice}` : ''}`;
}

function isRole(value: string): value is MemberRole {
  return (ROLES as readonly string[]).includes(value);
}

async function membersPage(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  access: { user: User; membership: Membership },
  extra: { notice?: string; errors?: FormError[]; errorCode?: string; form?: InviteForm } = {},
  status = 200,
) {
  const { workspace, role } = access.membership;
  const canManage = canManageWorkspace(role);
  const members = await listMembers(deps.db, workspace.id);
  const invitations = canManage ? await listOpenInvitations(deps.db, deps.clock.now(), workspace.id) : [];
  const accounts = await emailsOfUsers(deps.db, [
    ...members.flatMap((member) => (member.userId ? [member.userId] : [])),
    ...invitations.flatMap((invitation) => (invitation.invitedByUserId ? [invitation.invitedByUserId] : [])),
  ]);
  const owners = members.filter((member) => member.role === 'owner').length;
  const self = members.find((member) => member.userId === access.user.id);
  const assignable = assignableRoles(role);
  const shown = members.map((member) => ({
    ...member,
    email: (member.userId && accounts.get(member.userId)) || member.email,
    isSelf: member.userId === access.user.id,
    manageable: canManage && canManageRole(role, member.role),
    lastOwner: member.role === 'owner' && owners <= 1,
    roleChoices: canManageRole(role, member.role) ? assignable : [],
  }));
  return sendView(
    request,
    reply,
    'members',
    {
      title: `Members · ${workspace.name}`,
      errorCode: extra.errorCode,
      workspace,
      role,
      canManage,
      members: shown,
      invitations: invitations.map((invitation) => ({
        ...invitation,
        invitedBy: (invitation.invitedByUserId && accounts.get(invitation.invitedByUserId)) || null,
        manageable: canManageRole(role, invitation.role),
      })),
      transferCandidates: role === 'owner' ? shown.filter((member) => member.role !== 'owner') : [],
      selfIsLastOwner: self?.role === 'owner' && owners <= 1,
      assignable,
      notice: extra.notice,
      formId: newFormId(),
      errors: extra.errors ?? [],
      form: extra.form ?? { email: '', role: 'member' },
    },
    status,
  );
}

/** A refused change: the members page again, with the reason, under a status and a stable code. */
function failure(
  error: MemberChangeError,
  baseUrl: string,
  workspaceId: string,
): { status: number; message: string; field?: string } {
  switch (error.code) {
    case 'plan_limit_reached': {
      const { status, message } = planLimitRefusal(baseUrl, workspaceId, error);
      return { status, message };
    }
    case 'forbidden':
      return {
        status: 403,
        message: 'Your role does not allow this: admins cannot change owners or make anyone an owner.',
      };
    case 'last_owner':
      return {
        status: 409,
        message: 'A workspace needs at least one owner. Make another member an owner first.',
      };
    case 'already_member':
      return { status: 409, field: 'email', message: 'That address is already a member of this workspace.' };
    case 'already_owner':
      return { status: 409, field: 'new_owner', message: 'That member is already an owner.' };
    case 'invalid_email':
      return { status: 400, field: 'email', message: 'Enter an email address like name@example.com.' };
    case 'too_many':
      return {
        status: 429,
        message: `Several invitations went to this address recently. Try again in ${minutesUntil(error.retryAfterMs)}.`,
      };
    default:
      return { status: 404, message: 'That member or invitation is no longer here.' };
  }
}

async function answer(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  access: { user: User; membership: Membership },
  result: { ok: true } | { ok: false; error: MemberChangeError },
  success: { notice: keyof typeof NOTICES } | { redirect: string },
  form?: InviteForm,
) {
  const workspaceId = access.membership.workspace.id;
  if (result.ok) {
    return reply.redirect(
      'redirect' in success ? success.redirect : membersUrl(workspaceId, success.notice),
      303,
    );
  }
  if (result.error.code === 'not_member') return sendNotFound(request, reply);
  const { status, ...error } = failure(result.error, deps.config.baseUrl, workspaceId);
  // What the account may do may have changed since the guard looked: render with its role now.
  const now = await membershipFor(deps, request, reply, workspaceId, 'view');
  if (!now) return reply;
  return membersPage(
    deps,
    request,
    reply,
    now,
    { errors: [error], errorCode: result.error.code, form },
    status,
  );
}

/**
 * The Members page: every member sees who is in the workspace; owners and admins also see open
 * invitations and manage members. The domain functions check the actor's role again, under the
 * workspace's lock; a member posting a management form gets 403.
 */
export function memberRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const ctx = { clock: deps.clock, baseUrl: deps.config.baseUrl };

  app.get<Params & { Querystring: { notice?: string } }>('/members', async (request, reply) => {
    const access = accessOf(request);
    const notice = request.query.notice;
    return membersPage(deps, request, reply, access, {
      notice: notice && Object.hasOwn(NOTICES, notice) ? NOTICES[notice as keyof typeof NOTICES] : undefined,
    });
  });

  app.post<Params>(
    '/members/invitations',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const form = { email: field(request, 'email').trim(), role: field(request, 'role') };
      if (!isRole(form.role)) {
        return membersPage(
          deps,
          request,
          reply,
          access,
          { errors: [{ field: 'role', message: 'Choose a role.' }], errorCode: 'invalid_role', form },
          400,
        );
      }
      const role = form.role;
      const once = await onceForForm(
        deps,
        request,
        `member-invitation:${access.membership.workspace.id}:${access.user.id}`,
        () =>
          inviteMember(
            deps.db,
            ctx,
            {
              workspaceId: access.membership.workspace.id,
              actorUserId: access.user.id,
              email: form.email,
              role,
            },
            userSourceOf(request, access.user),
          ),
        (result) => result.ok,
      );
      // Sent twice (a double click): a finished first sending invited (a refusal frees the form id);
      // one still under way shows on the page once it is done.
      if (once.kind === 'sent_before') {
        const workspaceId = access.membership.workspace.id;
        return reply.redirect(membersUrl(workspaceId, once.finished ? 'invited' : undefined), 303);
      }
      return answer(deps, request, reply, access, once.result, { notice: 'invited' }, form);
    },
  );

  app.post<InvitationParams>(
    '/members/invitations/:invitationId/resend',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const result = await resendMemberInvitation(
        deps.db,
        ctx,
        {
          workspaceId: access.membership.workspace.id,
          actorUserId: access.user.id,
          invitationId: request.params.invitationId,
        },
        userSourceOf(request, access.user),
      );
      return answer(deps, request, reply, access, result, { notice: 'resent' });
    },
  );

  app.post<InvitationParams>(
    '/members/invitations/:invitationId/revoke',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const result = await revokeMemberInvitation(
        deps.db,
        ctx,
        {
          workspaceId: access.membership.workspace.id,
          actorUserId: access.user.id,
          invitationId: request.params.invitationId,
        },
        userSourceOf(request, access.user),
      );
      return answer(deps, request, reply, access, result, { notice: 'revoked' });
    },
  );

  app.post<MemberParams>(
    '/members/:memberId/role',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const role = field(request, 'role');
      if (!isRole(role)) {
        return membersPage(
          deps,
          request,
          reply,
          access,
          { errors: [{ message: 'Choose a role.' }], errorCode: 'invalid_role' },
          400,
        );
      }
      const result = await changeMemberRole(
        deps.db,
        ctx,
        {
          workspaceId: access.membership.workspace.id,
          actorUserId: access.user.id,
          memberId: request.params.memberId,
          role,
        },
        userSourceOf(request, access.user),
      );
      return answer(deps, request, reply, access, result, { notice: 'role' });
    },
  );

  app.post<MemberParams>(
    '/members/:memberId/remove',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const result = await removeMember(
        deps.db,
        ctx,
        {
          workspaceId: access.membership.workspace.id,
          actorUserId: access.user.id,
          memberId: request.params.memberId,
        },
        userSourceOf(request, access.user),
      );
      return answer(deps, request, reply, access, result, { notice: 'removed' });
    },
  );

  app.post<Params>('/members/transfer', { config: { workspaceRole: 'manage' } }, async (request, reply) => {
    const access = accessOf(request);
    const result = await transferOwnership(
      deps.db,
      ctx,
      {
        workspaceId: access.membership.workspace.id,
        actorUserId: access.user.id,
        memberId: field(request, 'new_owner'),
        stepDown: field(request, 'step_down') === 'yes',
      },
      userSourceOf(request, access.user),
    );
    return answer(deps, request, reply, access, result, { notice: 'transferred' });
  });

  app.post<Params>('/members/leave', async (request, reply) => {
    const access = accessOf(request);
    const result = await leaveWorkspace(
      deps.db,
      ctx,
      {
        workspaceId: access.membership.workspace.id,
        userId: access.user.id,
      },
      userSourceOf(request, access.user),
    );
    return answer(deps, request, reply, access, result, { redirect: '/workspaces' });
  });
}
