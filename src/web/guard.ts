import type { FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../accounts/index.ts';
import { canManageWorkspace, findMembership, hasAccess, type Membership } from '../workspace/index.ts';
import type { WebDeps } from './context.ts';
import { isIdInput } from './forms.ts';
import { sendForbidden, sendNotFound, sendPage } from './render.ts';

/** The first page after sign-in (`GET /w`): the workspace at a glance, or the list of several. */
export const AFTER_SIGN_IN = '/w';

/** The signed-in account, or a redirect to the sign-in page that comes back here. */
export function signedInUser(request: FastifyRequest, reply: FastifyReply): User | undefined {
  const user = request.visit?.user;
  if (user) return user;
  const back = request.method === 'GET' ? request.url : AFTER_SIGN_IN;
  void reply.redirect(`/sign-in?next=${encodeURIComponent(back)}`, 303);
  return undefined;
}

/**
 * The account's membership of the workspace in the URL. A workspace the account is not a member
 * of answers 404 (whether it exists is not the visitor's business); `manage` pages answer 403 to
 * members who are neither owner nor admin.
 *
 * An external auditor is let through only while their access lasts (checked against the injected
 * clock on every request) and only to routes marked `auditorMayRead`; any other page or form of
 * the workspace answers 403 (`auditor_not_allowed`), before its handler looks anything up, so it
 * tells nothing about what exists there. The workspace's overview leads them to its controls.
 */
export async function membershipFor(
  deps: WebDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  workspaceId: string,
  need: 'view' | 'manage',
): Promise<{ user: User; membership: Membership } | undefined> {
  const user = signedInUser(request, reply);
  if (!user) return undefined;
  const membership = isIdInput(workspaceId) ? await findMembership(deps.db, workspaceId, user.id) : undefined;
  if (!membership) {
    sendNotFound(request, reply);
    return undefined;
  }
  if (membership.role === 'auditor' && !auditorMayPass(deps, request, reply, membership)) return undefined;
  if (need === 'manage' && !canManageWorkspace(membership.role)) {
    sendForbidden(request, reply, 'Only the workspace’s owners and admins can open this page.');
    return undefined;
  }
  return { user, membership };
}

function auditorMayPass(deps: WebDeps, request: FastifyRequest, reply: FastifyReply, membership: Membership) {
  const workspaceId = membership.workspace.id;
  if (!hasAccess(membership, deps.clock.now())) {
    sendAuditorRefusal(
      request,
      reply,
      'auditor_access_ended',
      'Your auditor access to this workspace has ended. Ask its owner for a new invitation if you need it again.',
    );
    return false;
  }
  if (request.routeOptions.config.auditorMayRead) return true;
  if (request.method === 'GET' && request.routeOptions.url === '/w/:workspaceId') {
    void reply.redirect(`/w/${encodeURIComponent(workspaceId)}/controls`, 303);
    return false;
  }
  sendAuditorRefusal(
    request,
    reply,
    'auditor_not_allowed',
    'As an auditor you can read the controls, risks, policies and evidence of this workspace; this page is not among them.',
  );
  return false;
}

function sendAuditorRefusal(
  request: FastifyRequest,
  reply: FastifyReply,
  errorCode: string,
  message: string,
) {
  sendPage(
    request,
    reply,
    'error',
    {
      title: 'Not allowed',
      heading: 'Not allowed',
      message,
      errorCode,
      backHref: AFTER_SIGN_IN,
      backLabel: 'Your workspaces',
    },
    403,
  );
}
