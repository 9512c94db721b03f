import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../../accounts/index.ts';
import {
  canManageWorkspace,
  type Membership,
  type RenameError,
  renameWorkspace,
  WORKSPACE_NAME_MAX,
} from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { DIRECTION_CONTROLS_REFUSED, field } from '../forms.ts';
import { membershipFor } from '../guard.ts';
import { sendForbidden, sendNotFound, sendView } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

type Params = { Params: { workspaceId: string } };

const NOTICES = { renamed: 'Workspace renamed.' } as const;

const OWNERS_ONLY = 'Only the workspace’s owners can rename it.';

/** Why a name was refused, on the form: the same rule as the REST API's. */
const NAME_REFUSALS = {
  empty: 'Enter a name for the workspace.',
  too_long: `Use at most ${WORKSPACE_NAME_MAX} characters.`,
  refused_characters: `Leave out control characters (line breaks, tabs). ${DIRECTION_CONTROLS_REFUSED}`,
} as const;

type FormError = { field?: string; message: string };

function settingsPage(
  request: FastifyRequest,
  reply: FastifyReply,
  membership: Membership,
  extra: { notice?: string; errors?: FormError[]; errorCode?: string; name?: string } = {},
  status = 200,
) {
  const { workspace, role } = membership;
  return sendView(
    request,
    reply,
    'settings',
    {
      title: `Settings · ${workspace.name}`,
      errorCode: extra.errorCode,
      workspace,
      role,
      canManage: canManageWorkspace(role),
      canRename: role === 'owner',
      nameMaxLength: WORKSPACE_NAME_MAX,
      notice: extra.notice,
      errors: extra.errors ?? [],
      name: extra.name ?? workspace.name,
    },
    status,
  );
}

async function refused(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  access: { user: User; membership: Membership },
  error: RenameError,
  name: string,
) {
  if (error.code === 'not_found') return sendNotFound(request, reply);
  if (error.code === 'forbidden') return sendForbidden(request, reply, OWNERS_ONLY);
  // The page again, with the account's membership as it is now.
  const now = await membershipFor(deps, request, reply, access.membership.workspace.id, 'view');
  if (!now) return reply;
  const errors = [{ field: 'name', message: NAME_REFUSALS[error.reason] }];
  return settingsPage(request, reply, now.membership, { errors, errorCode: error.code, name }, 400);
}

/**
 * The Settings page: every member sees the workspace's name; owners rename it. The domain checks
 * the role again under the workspace's lock, so an admin or member posting the form gets 403.
 */
export function settingsRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<Params & { Querystring: { notice?: string } }>('/settings', async (request, reply) => {
    const access = accessOf(request);
    const notice = request.query.notice;
    return settingsPage(request, reply, access.membership, {
      notice: notice && Object.hasOwn(NOTICES, notice) ? NOTICES[notice as keyof typeof NOTICES] : undefined,
    });
  });

  app.post<Params>('/settings/name', async (request, reply) => {
    const access = accessOf(request);
    const workspaceId = access.membership.workspace.id;
    if (access.membership.role !== 'owner') return sendForbidden(request, reply, OWNERS_ONLY);
    const name = field(request, 'name');
    const result = await renameWorkspace(
      deps.db,
      deps.clock,
      { workspaceId, name, by: { kind: 'member', userId: access.user.id } },
      userSourceOf(request, access.user),
    );
    if (!result.ok) return refused(deps, request, reply, access, result.error, name);
    return reply.redirect(`/w/${workspaceId}/settings?notice=renamed`, 303);
  });
}
