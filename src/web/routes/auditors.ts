import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DAY_MS } from '../../shared/clock.ts';
import {
  AUDITOR_ACCESS_MAX_DAYS,
  AUDITORS_MAX,
  type AuditorChangeError,
  inviteAuditor,
  listAuditors,
  revokeAuditor,
  revokeAuditorInvitation,
} from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import type { FieldError } from '../form-errors.ts';
import { newFormId, onceForForm } from '../form-once.ts';
import { field } from '../forms.ts';
import { sendNotFound, sendView } from '../render.ts';
import { accessOf, type WorkspaceAccess } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';
import { minutesUntil } from './sign-in.ts';

type Params = { Params: { workspaceId: string } };
type AuditorParams = { Params: { workspaceId: string; memberId: string } };
type InvitationParams = { Params: { workspaceId: string; invitationId: string } };
type InviteForm = { email: string; access_until: string };

/** What a finished change says on the page it redirects to (`?notice=`): fixed texts, never an address. */
const NOTICES = {
  invited: 'Invitation sent. The auditor gets read-only access once they accept it.',
  revoked: 'Auditor access ended: they can no longer open this workspace.',
  invitation_revoked: 'Invitation revoked: its link no longer works.',
} as const;

const day = (at: number) => new Date(at).toISOString().slice(0, 10);

function auditorsUrl(workspaceId: string, notice?: keyof typeof NOTICES): string {
  return `/w/${workspaceId}/auditors${notice ? `?notice=${notice}` : ''}`;
}

/** A refused change, as a status, a stable code and a message (on a field when it is about one). */
function failure(error: AuditorChangeError): { status: number; error: FieldError } {
  switch (error.code) {
    case 'forbidden':
      return {
        status: 403,
        error: { message: 'Only the workspace’s owners invite auditors and end their access.' },
      };
    case 'already_member':
      return {
        status: 409,
        error: {
          field: 'email',
          message: 'That address belongs to a member of this workspace, who sees it already.',
        },
      };
    case 'invalid_email':
      return {
        status: 400,
        error: { field: 'email', message: 'Enter an email address like name@example.com.' },
      };
    case 'invalid_date':
      return {
        status: 400,
        error: {
          field: 'access_until',
          message: `Choose a date from today to at most ${AUDITOR_ACCESS_MAX_DAYS} days ahead.`,
        },
      };
    case 'too_many_auditors':
      return {
        status: 409,
        error: {
          message: `A workspace holds at most ${AUDITORS_MAX} auditors and pending auditor invitations; remove one first.`,
        },
      };
    case 'too_many':
      return {
        status: 429,
        error: {
          message: `Several invitations went to this address recently. Try again in ${minutesUntil(error.retryAfterMs)}.`,
        },
      };
    default:
      return { status: 404, error: { message: 'That auditor or invitation is no longer here.' } };
  }
}

/**
 * The Auditors page (owners and admins): external auditors with read-only access until a date, and
 * their open invitations. Owners invite and revoke; the domain functions check that again under
 * the workspace's lock.
 */
export function auditorRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const ctx = { clock: deps.clock, baseUrl: deps.config.baseUrl };

  async function auditorsPage(
    request: FastifyRequest,
    reply: FastifyReply,
    access: WorkspaceAccess,
    extra: { notice?: string; errors?: FieldError[]; errorCode?: string; form?: InviteForm } = {},
    status = 200,
  ) {
    const { workspace, role } = access.membership;
    const now = deps.clock.now();
    const { auditors, invitations } = await listAuditors(deps.db, now, workspace.id);
    return sendView(
      request,
      reply,
      'auditors',
      {
        title: `Auditors · ${workspace.name}`,
        errorCode: extra.errorCode,
        workspace,
        canManage: true,
        isOwner: role === 'owner',
        auditors,
        invitations,
        notice: extra.notice,
        formId: newFormId(),
        errors: extra.errors ?? [],
        form: extra.form ?? { email: '', access_until: day(now.getTime() + 30 * DAY_MS) },
        minDate: day(now.getTime()),
        maxDate: day(now.getTime() + AUDITOR_ACCESS_MAX_DAYS * DAY_MS),
      },
      status,
    );
  }

  async function answer(
    request: FastifyRequest,
    reply: FastifyReply,
    access: WorkspaceAccess,
    result: { ok: true } | { ok: false; error: AuditorChangeError },
    notice: keyof typeof NOTICES,
    form?: InviteForm,
  ) {
    const workspaceId = access.membership.workspace.id;
    if (result.ok) return reply.redirect(auditorsUrl(workspaceId, notice), 303);
    if (result.error.code === 'not_member') return sendNotFound(request, reply);
    const { status, error } = failure(result.error);
    return auditorsPage(
      request,
      reply,
      access,
      { errors: [error], errorCode: result.error.code, form },
      status,
    );
  }

  app.get<Params & { Querystring: { notice?: string } }>(
    '/auditors',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const notice = request.query.notice;
      return auditorsPage(request, reply, accessOf(request), {
        notice:
          notice && Object.hasOwn(NOTICES, notice) ? NOTICES[notice as keyof typeof NOTICES] : undefined,
      });
    },
  );

  app.post<Params>(
    '/auditors/invitations',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const workspaceId = access.membership.workspace.id;
      const form = {
        email: field(request, 'email').trim(),
        access_until: field(request, 'access_until').trim(),
      };
      const once = await onceForForm(
        deps,
        request,
        `auditor-invitation:${workspaceId}:${access.user.id}`,
        () =>
          inviteAuditor(
            deps.db,
            ctx,
            { workspaceId, actorUserId: access.user.id, email: form.email, accessUntil: form.access_until },
            userSourceOf(request, access.user),
          ),
        (result) => result.ok,
      );
      if (once.kind === 'sent_before') {
        return reply.redirect(auditorsUrl(workspaceId, once.finished ? 'invited' : undefined), 303);
      }
      return answer(request, reply, access, once.result, 'invited', form);
    },
  );

  app.post<AuditorParams>(
    '/auditors/:memberId/revoke',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const result = await revokeAuditor(
        deps.db,
        ctx,
        {
          workspaceId: access.membership.workspace.id,
          actorUserId: access.user.id,
          memberId: request.params.memberId,
        },
        userSourceOf(request, access.user),
      );
      return answer(request, reply, access, result, 'revoked');
    },
  );

  app.post<InvitationParams>(
    '/auditors/invitations/:invitationId/revoke',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const result = await revokeAuditorInvitation(
        deps.db,
        ctx,
        {
          workspaceId: access.membership.workspace.id,
          actorUserId: access.user.id,
          invitationId: request.params.invitationId,
        },
        userSourceOf(request, access.user),
      );
      return answer(request, reply, access, result, 'invitation_revoked');
    },
  );
}
