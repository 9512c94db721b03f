import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { emailsOfUsers } from '../../accounts/index.ts';
import {
  type ApiKeyInfo,
  createApiKey,
  listApiKeys,
  type NewApiKey,
  revokeWorkspaceApiKey,
} from '../../api/index.ts';
import { DAY_MS } from '../../shared/clock.ts';
import type { Workspace } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { field, isStorable } from '../forms.ts';
import { membershipFor } from '../guard.ts';
import { sendNotFound, sendPage } from '../render.ts';
import type { RouteDeps } from './deps.ts';

const KEY_NAME_MAX_LENGTH = 100;
const EXPIRY_OPTIONS = [
  { value: 'never', label: 'Never', days: null },
  { value: '7', label: 'In 7 days', days: 7 },
  { value: '30', label: 'In 30 days', days: 30 },
  { value: '90', label: 'In 90 days', days: 90 },
  { value: '365', label: 'In 1 year', days: 365 },
] as const;

type Params = { Params: { workspaceId: string } };

type KeyState = { state: 'revoked' | 'expired' | 'active' } | { state: 'rotating' | 'expiring'; until: Date };

/** Where a key stands now: stopped (revoked, expired) or working, perhaps until a set time. */
function stateOf(key: ApiKeyInfo, now: number): KeyState & { active: boolean } {
  if (key.revokedAt && key.revokedAt.getTime() <= now) return { state: 'revoked', active: false };
  if (key.expiresAt && key.expiresAt.getTime() <= now) return { state: 'expired', active: false };
  if (key.revokedAt) return { state: 'rotating', until: key.revokedAt, active: true };
  if (key.expiresAt) return { state: 'expiring', until: key.expiresAt, active: true };
  return { state: 'active', active: true };
}

async function integrationsPage(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  workspace: Workspace,
  extra: {
    created?: NewApiKey;
    errors?: { field?: string; message: string }[];
    form?: { name: string; expires_in: string };
  } = {},
  status = 200,
) {
  const keys = await listApiKeys(deps.db, workspace.id);
  const creators = await emailsOfUsers(
    deps.db,
    keys.flatMap((key) => (key.createdByUserId ? [key.createdByUserId] : [])),
  );
  const now = deps.clock.now().getTime();
  return sendPage(
    request,
    reply,
    'integrations',
    {
      title: `Integrations · ${workspace.name}`,
      workspace,
      keys: keys
        .map((key) => ({
          ...key,
          ...stateOf(key, now),
          creator: (key.createdByUserId && creators.get(key.createdByUserId)) || 'an operator',
        }))
        .reverse(),
      created: extra.created,
      errors: extra.errors ?? [],
      form: extra.form ?? { name: '', expires_in: 'never' },
      expiryOptions: EXPIRY_OPTIONS,
      nameMaxLength: KEY_NAME_MAX_LENGTH,
    },
    status,
  );
}

export function integrationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<Params>('/w/:workspaceId/integrations', async (request, reply) => {
    const access = await membershipFor(deps, request, reply, request.params.workspaceId, 'manage');
    if (!access) return reply;
    return integrationsPage(deps, request, reply, access.membership.workspace);
  });

  app.post<Params>('/w/:workspaceId/integrations/keys', async (request, reply) => {
    const access = await membershipFor(deps, request, reply, request.params.workspaceId, 'manage');
    if (!access) return reply;
    const workspace = access.membership.workspace;
    const form = { name: field(request, 'name').trim(), expires_in: field(request, 'expires_in') || 'never' };
    const expiry = EXPIRY_OPTIONS.find((option) => option.value === form.expires_in);
    const errors: { field: string; message: string }[] = [];
    if (form.name === '' || !isStorable(form.name) || [...form.name].length > KEY_NAME_MAX_LENGTH) {
      errors.push({ field: 'name', message: `Name the key (1 to ${KEY_NAME_MAX_LENGTH} characters).` });
    }
    if (!expiry) errors.push({ field: 'expires_in', message: 'Choose when the key expires.' });
    if (errors.length > 0 || !expiry) {
      return integrationsPage(
        deps,
        request,
        reply,
        workspace,
        { errors, form: { ...form, name: isStorable(form.name) ? form.name : '' } },
        400,
      );
    }
    const now = deps.clock.now().getTime();
    const created = await createApiKey(
      deps.db,
      deps.clock,
      {
        workspaceId: workspace.id,
        name: form.name,
        createdByUserId: access.user.id,
        expiresAt: expiry.days === null ? null : new Date(now + expiry.days * DAY_MS),
      },
      userSourceOf(request, access.user),
    );
    return integrationsPage(deps, request, reply, workspace, { created }, 201);
  });

  app.post<{ Params: { workspaceId: string; keyId: string } }>(
    '/w/:workspaceId/integrations/keys/:keyId/revoke',
    async (request, reply) => {
      const access = await membershipFor(deps, request, reply, request.params.workspaceId, 'manage');
      if (!access) return reply;
      const revoked = await revokeWorkspaceApiKey(
        deps.db,
        deps.clock,
        { workspaceId: access.membership.workspace.id, keyId: request.params.keyId },
        userSourceOf(request, access.user),
      );
      if (!revoked) return sendNotFound(request, reply);
      return reply.redirect(`/w/${access.membership.workspace.id}/integrations`, 303);
    },
  );
}
