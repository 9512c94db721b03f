import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  findUserByEmail,
  normalizeEmail,
  PASSWORD_MAX_LENGTH,
  PASSWORD_MIN_LENGTH,
} from '../../accounts/index.ts';
import { INVITATION_HOLDER, userActor } from '../../audit/index.ts';
import { PLANS } from '../../catalog/index.ts';
import { findInvitation, type Invitation, resendInvitation } from '../../workspace/index.ts';
import { auditSourceOf, recordFailedSignIn } from '../audit.ts';
import { field } from '../forms.ts';
import { type AcceptFailure, acceptInvitationAs } from '../invitation-flow.ts';
import { sendNotFound, sendPage } from '../render.ts';
import { signInBrowser } from '../session.ts';
import type { RouteDeps } from './deps.ts';
import { minutesUntil } from './sign-in.ts';

type Params = { Params: { token: string } };

/** What the form asks for, from who is looking and whether the address has an account. */
async function modeFor(deps: RouteDeps, request: FastifyRequest, invitation: Invitation) {
  const user = request.visit?.user;
  if (user)
    return normalizeEmail(user.email) === normalizeEmail(invitation.email) ? 'signed-in' : 'other-account';
  return (await findUserByEmail(deps.db, invitation.email)) ? 'existing-account' : 'new-account';
}

async function invitationPage(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  token: string,
  errors: { field?: string; message: string }[] = [],
  status = 200,
) {
  const invitation = await findInvitation(deps.db, deps, token);
  if (!invitation) return sendNotFound(request, reply);
  return sendPage(
    request,
    reply,
    'invitation',
    {
      title: `Invitation to ${invitation.workspace.name}`,
      invitation,
      planName: PLANS[invitation.workspace.plan].name,
      mode: await modeFor(deps, request, invitation),
      selfPath: `/invitations/${token}`,
      passwordMinLength: PASSWORD_MIN_LENGTH,
      passwordMaxLength: PASSWORD_MAX_LENGTH,
      errors,
    },
    status,
  );
}

function failureMessage(failure: AcceptFailure): { field?: string; message: string; status: number } {
  switch (failure.code) {
    case 'weak_password':
      return { field: 'password', message: failure.message, status: 400 };
    case 'invalid_credentials':
      return { field: 'password', message: 'That password is not right.', status: 401 };
    case 'throttled':
      return {
        message: `Too many attempts. Try again in ${minutesUntil(failure.retryAfterMs)}.`,
        status: 429,
      };
    case 'account_exists':
      return { message: 'An account with this address was just created. Enter its password.', status: 409 };
    case 'wrong_account':
      return { message: 'You are signed in with another address.', status: 403 };
    default:
      return { message: 'This invitation can no longer be accepted.', status: 409 };
  }
}

export function invitationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<Params>('/invitations/:token', async (request, reply) =>
    invitationPage(deps, request, reply, request.params.token),
  );

  app.post<Params>('/invitations/:token/accept', async (request, reply) => {
    const { token } = request.params;
    const user = request.visit?.user;
    const result = await acceptInvitationAs(
      deps,
      token,
      user
        ? { kind: 'session', user }
        : { kind: 'password', password: field(request, 'password'), ip: request.ip },
      { ip: request.ip, userAgent: request.headers['user-agent'] ?? null },
    );
    if (result.ok) {
      await signInBrowser(deps, deps.cookies, request, reply, result.value.user);
      return reply.redirect(`/w/${result.value.workspaceId}`, 303);
    }
    if (result.error.code === 'not_found') return sendNotFound(request, reply);
    if (result.error.code === 'invalid_credentials') {
      await recordFailedSignIn(deps, request, result.error.account);
    }
    const { status, ...error } = failureMessage(result.error);
    return invitationPage(deps, request, reply, token, [error], status);
  });

  app.post<Params>('/invitations/:token/resend', async (request, reply) => {
    const { token } = request.params;
    const user = request.visit?.user;
    const result = await resendInvitation(
      deps.db,
      { clock: deps.clock, baseUrl: deps.config.baseUrl },
      token,
      auditSourceOf(request, user ? userActor(user) : INVITATION_HOLDER),
    );
    if (result.ok) {
      return sendPage(request, reply, 'message', {
        title: 'Invitation sent',
        heading: 'A fresh invitation is on its way',
        paragraphs: [
          `We sent a new invitation link to ${result.value.email}. It works once and expires in 7 days.`,
          'Earlier links to this address no longer work.',
        ],
      });
    }
    if (result.error.code === 'not_found') return sendNotFound(request, reply);
    const message =
      result.error.code === 'too_many'
        ? `Several invitations were sent to this address recently. Try again in ${minutesUntil(result.error.retryAfterMs)}.`
        : result.error.code === 'withdrawn'
          ? 'This invitation was withdrawn, so it cannot be sent again. Ask the workspace’s owners or admins.'
          : result.error.code === 'used'
            ? 'This invitation was used, so it is not sent again: sign in to open the workspace.'
            : 'This invitation still works: accept it below.';
    return invitationPage(
      deps,
      request,
      reply,
      token,
      [{ message }],
      result.error.code === 'too_many' ? 429 : 409,
    );
  });
}
