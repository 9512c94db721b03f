import type { FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../accounts/index.ts';
import { canManageWorkspace, findMembership, type Membership } from '../workspace/index.ts';
import type { WebDeps } from './context.ts';
import { isIdInput } from './forms.ts';
import { sendForbidden, sendNotFound } from './render.ts';

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
  if (need === 'manage' && !canManageWorkspace(membership.role)) {
    sendForbidden(request, reply, 'Only the workspace’s owners and admins can open this page.');
    return undefined;
  }
  return { user, membership };
}
