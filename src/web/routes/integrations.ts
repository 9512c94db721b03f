import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { emailsOfUsers } from '../../accounts/index.ts';
import {
  type ApiKeyInfo,
  createApiKey,
  findApiKey,
  listApiKeys,
  MAX_ROTATION_OVERLAP_MS,
  type NewApiKey,
  revokeWorkspaceApiKey,
  rotateApiKey,
} from '../../api-keys/index.ts';
import { DAY_MS, HOUR_MS } from '../../shared/clock.ts';
import type { Workspace } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { newFormId, onceForForm, sentBeforeMessage } from '../form-once.ts';
import { DIRECTION_CONTROLS_REFUSED, field, isDisplayName, isIdInput, isStorable } from '../forms.ts';
import { planLimitRefusal } from '../plan-limit.ts';
import { sendNotFound, sendPage } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const KEY_NAME_MAX_LENGTH = 100;
const SENT_BEFORE =
  'This form was sent already, and the key it created is in the list. Its secret was shown once: ' +
  'if you did not copy it, revoke that key and create another.';
const EXPIRY_OPTIONS = [
  { value: 'never', label: 'Never', days: null },
  { value: '7', label: 'In 7 days', days: 7 },
  { value: '30', label: 'In 30 days', days: 30 },
  { value: '90', label: 'In 90 days', days: 90 },
  { value: '365', label: 'In 1 year', days: 365 },
] as const;

/** How long a rotated key keeps working beside its successor; the CLI allows the same range. */
const OVERLAP_OPTIONS = [
  { value: 'now', label: 'Now: the old key stops working at once', ms: 0 },
  { value: '1h', label: 'In 1 hour', ms: HOUR_MS },
  { value: '24h', label: 'In 24 hours', ms: DAY_MS },
  { value: '7d', label: 'In 7 days', ms: 7 * DAY_MS },
  { value: '30d', label: 'In 30 days', ms: 30 * DAY_MS },
  { value: '90d', label: 'In 90 days (the longest)', ms: MAX_ROTATION_OVERLAP_MS },
] as const;
const DEFAULT_OVERLAP = '24h';

type Params = { Params: { workspaceId: string } };
type KeyParams = { Params: { workspaceId: string; keyId: string } };

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
    /** The key the new one replaces, with the time it stops working. */
    replaced?: ApiKeyInfo;
    errors?: { field?: string; message: string }[];
    errorCode?: string;
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
  const hints = new Map(keys.map((key) => [key.id, `${key.prefix}…${key.lastFour}`]));
  return sendPage(
    request,
    reply,
    'integrations',
    {
      title: `Integrations · ${workspace.name}`,
      errorCode: extra.errorCode,
      workspace,
      keys: keys
        .map((key) => ({
          ...key,
          ...stateOf(key, now),
          creator: (key.createdByUserId && creators.get(key.createdByUserId)) || 'an operator',
          replaces: key.replacesKeyId ? hints.get(key.replacesKeyId) : undefined,
        }))
        .reverse(),
      created: extra.created,
      replaced: extra.replaced,
      now,
      errors: extra.errors ?? [],
      form: extra.form ?? { name: '', expires_in: 'never' },
      expiryOptions: EXPIRY_OPTIONS,
      nameMaxLength: KEY_NAME_MAX_LENGTH,
      formId: newFormId(),
    },
    status,
  );
}

export function integrationRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<Params>('/integrations', { config: { workspaceRole: 'manage' } }, async (request, reply) => {
    const access = accessOf(request);
    return integrationsPage(deps, request, reply, access.membership.workspace);
  });

  app.post<Params>('/integrations/keys', { config: { workspaceRole: 'manage' } }, async (request, reply) => {
    const access = accessOf(request);
    const workspace = access.membership.workspace;
    const form = { name: field(request, 'name').trim(), expires_in: field(request, 'expires_in') || 'never' };
    const expiry = EXPIRY_OPTIONS.find((option) => option.value === form.expires_in);
    const errors: { field: string; message: string }[] = [];
    if (form.name === '' || !isStorable(form.name) || [...form.name].length > KEY_NAME_MAX_LENGTH) {
      errors.push({ field: 'name', message: `Name the key (1 to ${KEY_NAME_MAX_LENGTH} characters).` });
    } else if (!isDisplayName(form.name)) {
      errors.push({ field: 'name', message: DIRECTION_CONTROLS_REFUSED });
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
    const once = await onceForForm(
      deps,
      request,
      `api-key:${workspace.id}:${access.user.id}`,
      () =>
        createApiKey(
          deps.db,
          deps.clock,
          {
            workspaceId: workspace.id,
            name: form.name,
            createdByUserId: access.user.id,
            expiresAt: expiry.days === null ? null : new Date(now + expiry.days * DAY_MS),
          },
          userSourceOf(request, access.user),
        ),
      (result) => result.ok,
    );
    if (once.kind === 'sent_before') {
      const message = sentBeforeMessage(once, SENT_BEFORE);
      return integrationsPage(deps, request, reply, workspace, { errors: [{ message }] }, 409);
    }
    const created = once.result;
    if (!created.ok) {
      if (created.error.code === 'workspace_not_found') return sendNotFound(request, reply);
      const { status, code, message } = planLimitRefusal(deps.config.baseUrl, workspace.id, created.error);
      return integrationsPage(
        deps,
        request,
        reply,
        workspace,
        { errors: [{ message }], errorCode: code, form },
        status,
      );
    }
    return integrationsPage(deps, request, reply, workspace, { created: created.value }, 201);
  });

  app.post<{ Params: { workspaceId: string; keyId: string } }>(
    '/integrations/keys/:keyId/revoke',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
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

  app.get<KeyParams>(
    '/integrations/keys/:keyId/rotate',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const workspace = access.membership.workspace;
      const key = await rotatableKey(deps, request, reply, workspace, request.params.keyId);
      if (!key) return reply;
      return rotatePage(request, reply, workspace, key, { overlap: DEFAULT_OVERLAP, errors: [] });
    },
  );

  app.post<KeyParams>(
    '/integrations/keys/:keyId/rotate',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const workspace = access.membership.workspace;
      const key = await rotatableKey(deps, request, reply, workspace, request.params.keyId);
      if (!key) return reply;
      const overlap = OVERLAP_OPTIONS.find((option) => option.value === field(request, 'overlap'));
      if (!overlap) {
        const errors = [{ field: 'overlap', message: 'Choose when the old key stops working.' }];
        return rotatePage(request, reply, workspace, key, { overlap: DEFAULT_OVERLAP, errors }, 400);
      }
      const revokeOldAt = new Date(deps.clock.now().getTime() + overlap.ms);
      const rotated = await rotateApiKey(
        deps.db,
        deps.clock,
        key.id,
        userSourceOf(request, access.user),
        revokeOldAt,
      );
      if (!rotated.ok) {
        const error = rotated.error;
        if (error.code === 'not_found') return sendNotFound(request, reply);
        if (error.code === 'plan_limit_reached') {
          const { status, code, message } = planLimitRefusal(deps.config.baseUrl, workspace.id, error);
          const errors = [{ field: 'overlap', message: `${message} ${OVERLAP_AT_LIMIT}` }];
          return rotatePage(
            request,
            reply,
            workspace,
            key,
            { overlap: 'now', errors, errorCode: code },
            status,
          );
        }
        return sendKeyNotRotatable(request, reply, workspace, NOT_ROTATABLE[error.code]);
      }
      const { old: replaced, ...created } = rotated.value;
      return integrationsPage(deps, request, reply, workspace, { created, replaced }, 201);
    },
  );
}

/** With an overlap both keys count against the plan until the old one stops; without, the new one replaces it. */
const OVERLAP_AT_LIMIT =
  'Both keys would work, and count, until the old one stops: choose “Now” to replace the key without an overlap.';

/** Why a key in this state is not rotated: it no longer works, or it was replaced already. */
const NOT_ROTATABLE: Record<'revoked' | 'expired' | 'already_rotated', string> = {
  revoked: 'This key is already revoked.',
  expired: 'This key has expired; create a new one instead.',
  already_rotated: 'This key was already replaced by a rotation; revoke it if it should stop working sooner.',
};
const STATE_NOT_ROTATABLE: Partial<Record<KeyState['state'], string>> = {
  revoked: NOT_ROTATABLE.revoked,
  expired: NOT_ROTATABLE.expired,
  rotating: NOT_ROTATABLE.already_rotated,
};

/**
 * The workspace's key named in the URL, if it can be rotated: a key of another workspace is a
 * 404; one that no longer works, or was already replaced, answers why (409).
 */
async function rotatableKey(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  workspace: Workspace,
  keyId: string,
): Promise<ApiKeyInfo | undefined> {
  const key = isIdInput(keyId) ? await findApiKey(deps.db, keyId) : undefined;
  if (!key || key.workspaceId !== workspace.id) {
    sendNotFound(request, reply);
    return undefined;
  }
  const refusal = STATE_NOT_ROTATABLE[stateOf(key, deps.clock.now().getTime()).state];
  if (refusal) {
    sendKeyNotRotatable(request, reply, workspace, refusal);
    return undefined;
  }
  return key;
}

function sendKeyNotRotatable(
  request: FastifyRequest,
  reply: FastifyReply,
  workspace: Workspace,
  message: string,
): FastifyReply {
  return sendPage(
    request,
    reply,
    'error',
    {
      title: 'Key not rotated',
      heading: 'This key cannot be rotated',
      message,
      errorCode: 'key_not_rotatable',
      backHref: `/w/${workspace.id}/integrations`,
      backLabel: 'Back to Integrations',
    },
    409,
  );
}

function rotatePage(
  request: FastifyRequest,
  reply: FastifyReply,
  workspace: Workspace,
  key: ApiKeyInfo,
  form: { overlap: string; errors: { field: string; message: string }[]; errorCode?: string },
  status = 200,
): FastifyReply {
  return sendPage(
    request,
    reply,
    'key-rotate',
    {
      title: `Rotate ${key.name} · ${workspace.name}`,
      errorCode: form.errorCode,
      workspace,
      key,
      overlapOptions: OVERLAP_OPTIONS,
      overlap: form.overlap,
      errors: form.errors,
    },
    status,
  );
}
