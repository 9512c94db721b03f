import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSource } from '../../audit/index.ts';
import { PLAN_ENTITLEMENTS, PLANS } from '../../catalog/index.ts';
import { DAY_MS, HOUR_MS } from '../../shared/clock.ts';
import {
  ALL_EVENTS,
  CreateSubscriptionBody,
  createSubscription,
  deleteSubscription,
  EVENT_TYPE_NAMES,
  EVENT_TYPES,
  getSubscription,
  listDeliveries,
  listSubscriptions,
  RotateSecretBody,
  redeliver,
  rotateSecret,
  UpdateSubscriptionBody,
  updateSubscription,
  type WebhookDelivery,
  type WebhookDeps,
  type WebhookError,
  type WebhookSubscription,
} from '../../webhooks/index.ts';
import { lockWorkspace, type Workspace } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { type FieldError, schemaErrors } from '../form-errors.ts';
import { newFormId, onceForForm, sentBeforeMessage } from '../form-once.ts';
import { field, fieldValues, isIdInput } from '../forms.ts';
import { planLimitRefusal } from '../plan-limit.ts';
import { sendNotFound, sendPage } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

/** How many of a subscription's deliveries its page shows, newest first. */
const RECENT_DELIVERIES = 25;

/** How long the replaced secret keeps signing beside the new one; the REST API allows 0 to 7 days. */
const GRACE_OPTIONS = [
  { value: 'now', label: 'Not at all: only the new secret signs from now on', seconds: 0 },
  { value: '1h', label: 'For 1 hour', seconds: HOUR_MS / 1000 },
  { value: '24h', label: 'For 24 hours', seconds: DAY_MS / 1000 },
  { value: '7d', label: 'For 7 days (the longest)', seconds: (7 * DAY_MS) / 1000 },
] as const;
/** The REST API's default grace period. */
const DEFAULT_GRACE = '24h';

/** The catalog's descriptions mark code with backticks (Markdown for the OpenAPI document); pages show plain text. */
const EVENT_OPTIONS = EVENT_TYPE_NAMES.map((name) => ({
  name,
  description: EVENT_TYPES[name].replaceAll('`', ''),
}));

/** What each field of the forms must be, said once whichever rule of the schema it broke. */
const FIELD_ERRORS: Record<string, { field: string; message: string }> = {
  url: { field: 'url', message: 'Enter the URL that receives the events: https, at most 2048 characters.' },
  event_types: { field: 'event-types', message: 'Choose at least one event type, or all events.' },
  description: { field: 'description', message: 'Keep the description to 500 characters of text.' },
};
const GRACE_ERROR = { field: 'grace', message: 'Choose how long the old secret keeps signing.' };

type WorkspaceParams = { Params: { workspaceId: string } };
type HookParams = { Params: { workspaceId: string; hookId: string } };
type DeliveryParams = { Params: { workspaceId: string; hookId: string; deliveryId: string } };

const STATUS_LABELS: Record<string, string> = {
  enabled: 'Active',
  user: 'Paused',
  gone: 'Disabled: the receiver answered 410 Gone',
  failing: 'Disabled: every attempt of a delivery failed for about a day',
};

const DELIVERY_STATUS_LABELS: Record<WebhookDelivery['status'], string> = {
  pending: 'Pending',
  succeeded: 'Succeeded',
  failed: 'Failed',
  cancelled: 'Cancelled',
};

const dateOrNull = (value: string | null) => (value === null ? null : new Date(value));

/** Why a subscription does not deliver, in words; one paused over the plan's limit names the plan. */
function statusLabel(subscription: WebhookSubscription, workspace: Workspace): string {
  if (subscription.disabled_reason === 'plan_limit') {
    const limit = PLAN_ENTITLEMENTS[workspace.plan].webhookSubscriptions;
    return `Paused: over the ${PLANS[workspace.plan].name} plan's limit of ${limit}`;
  }
  return STATUS_LABELS[subscription.disabled_reason ?? 'enabled'] ?? 'Disabled';
}

/** A subscription as the pages show it: dates as dates, its state in words. */
function subscriptionView(subscription: WebhookSubscription, workspace: Workspace) {
  return {
    ...subscription,
    paused: subscription.status === 'disabled',
    statusLabel: statusLabel(subscription, workspace),
    overPlan: subscription.disabled_reason === 'plan_limit',
    allEvents: subscription.event_types.includes(ALL_EVENTS),
    createdAt: new Date(subscription.created_at),
    lastSuccessAt: dateOrNull(subscription.last_success_at),
    failingSince: dateOrNull(subscription.failing_since),
    previousSecretExpiresAt: dateOrNull(subscription.previous_secret_expires_at),
  };
}

function deliveryView(delivery: WebhookDelivery) {
  return {
    ...delivery,
    statusLabel: DELIVERY_STATUS_LABELS[delivery.status],
    createdAt: new Date(delivery.created_at),
    nextAttemptAt: dateOrNull(delivery.next_attempt_at),
    attempts: delivery.attempts.map((attempt) => ({ ...attempt, startedAt: new Date(attempt.started_at) })),
  };
}

/** The fields of a schema the body breaks, each named once with the form's own words. */

/** A refusal of the webhooks module as a page states it: the REST API's words, status and code. */
interface Refusal {
  error: FieldError;
  status: number;
  code: string;
}

function refusalOf(
  error: Exclude<WebhookError, { code: 'not_found' }>,
  baseUrl: string,
  workspaceId: string,
): Refusal {
  switch (error.code) {
    case 'target_refused':
      return {
        error: { field: 'url', message: `The URL ${error.refusal.message}.` },
        status: 400,
        code: error.refusal.code,
      };
    case 'plan_limit_reached': {
      const { status, code, message } = planLimitRefusal(baseUrl, workspaceId, error);
      return { error: { message }, status, code };
    }
    case 'subscription_disabled':
      return {
        error: { message: 'The subscription is paused; resume it first, then redeliver.' },
        status: 409,
        code: error.code,
      };
  }
}

interface SubscriptionForm {
  url: string;
  description: string;
  eventTypes: string[];
}

const EMPTY_FORM: SubscriptionForm = { url: '', description: '', eventTypes: [] };

function subscriptionForm(request: FastifyRequest): SubscriptionForm {
  return {
    url: field(request, 'url').trim(),
    description: field(request, 'description').trim(),
    eventTypes: fieldValues(request, 'event_types'),
  };
}

/** A workspace moved to a smaller plan keeps its subscriptions: the page lists as many as any plan allows. */
const MOST_SUBSCRIPTIONS_OF_ANY_PLAN = Math.max(
  ...Object.values(PLAN_ENTITLEMENTS).map((entitlements) => entitlements.webhookSubscriptions),
);

export function webhookRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const hooks: WebhookDeps = { db: deps.db, clock: deps.clock, targets: deps.webhookTargets, lockWorkspace };
  const listUrl = (workspace: Workspace) => `/w/${workspace.id}/integrations/webhooks`;
  const detailUrl = (workspace: Workspace, id: string) => `${listUrl(workspace)}/${id}`;

  async function listPage(
    request: FastifyRequest,
    reply: FastifyReply,
    workspace: Workspace,
    extra: {
      created?: WebhookSubscription & { secret: string };
      errors?: FieldError[];
      errorCode?: string;
      form?: SubscriptionForm;
    },
    status = 200,
  ): Promise<FastifyReply> {
    const { items } = await listSubscriptions(
      hooks,
      workspace.id,
      {},
      { limit: MOST_SUBSCRIPTIONS_OF_ANY_PLAN },
    );
    return sendPage(
      request,
      reply,
      'webhooks',
      {
        title: `Webhooks · ${workspace.name}`,
        errorCode: extra.errorCode,
        workspace,
        subscriptions: items.map((item) => subscriptionView(item, workspace)),
        created: extra.created
          ? { ...subscriptionView(extra.created, workspace), secret: extra.created.secret }
          : undefined,
        errors: extra.errors ?? [],
        form: extra.form ?? EMPTY_FORM,
        eventOptions: EVENT_OPTIONS,
        allEvents: ALL_EVENTS,
        limit: PLAN_ENTITLEMENTS[workspace.plan].webhookSubscriptions,
        planName: PLANS[workspace.plan].name,
        formId: newFormId(),
      },
      status,
    );
  }

  async function detailPage(
    request: FastifyRequest,
    reply: FastifyReply,
    workspace: Workspace,
    subscription: WebhookSubscription,
    extra: { secret?: string; errors?: FieldError[]; errorCode?: string; eventTypes?: string[] } = {},
    status = 200,
  ): Promise<FastifyReply> {
    const { items } = await listDeliveries(
      hooks,
      workspace.id,
      subscription.id,
      {},
      { limit: RECENT_DELIVERIES },
    );
    return sendPage(
      request,
      reply,
      'webhook',
      {
        title: `Webhook ${subscription.url} · ${workspace.name}`,
        errorCode: extra.errorCode,
        workspace,
        subscription: subscriptionView(subscription, workspace),
        deliveries: items.map(deliveryView),
        recentDeliveries: RECENT_DELIVERIES,
        secret: extra.secret,
        errors: extra.errors ?? [],
        eventTypes: extra.eventTypes ?? subscription.event_types,
        eventOptions: EVENT_OPTIONS,
        allEvents: ALL_EVENTS,
        graceOptions: GRACE_OPTIONS,
        grace: DEFAULT_GRACE,
        formId: newFormId(),
      },
      status,
    );
  }

  /** The signed-in owner's or admin's workspace and the subscription of it named in the URL (else 404). */
  async function managedSubscription(
    request: FastifyRequest<HookParams>,
    reply: FastifyReply,
  ): Promise<{ workspace: Workspace; subscription: WebhookSubscription; source: AuditSource } | undefined> {
    const access = accessOf(request);
    const workspace = access.membership.workspace;
    const subscription = isIdInput(request.params.hookId)
      ? await getSubscription(hooks, workspace.id, request.params.hookId)
      : undefined;
    if (!subscription) {
      sendNotFound(request, reply);
      return undefined;
    }
    return { workspace, subscription, source: userSourceOf(request, access.user) };
  }

  app.get<WorkspaceParams>(
    '/integrations/webhooks',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      return listPage(request, reply, access.membership.workspace, {});
    },
  );

  app.post<WorkspaceParams>(
    '/integrations/webhooks',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const workspace = access.membership.workspace;
      const form = subscriptionForm(request);
      const body = {
        url: form.url,
        event_types: form.eventTypes,
        ...(form.description === '' ? {} : { description: form.description }),
      };
      const invalid = schemaErrors(CreateSubscriptionBody, body, FIELD_ERRORS);
      if (invalid.length > 0) return listPage(request, reply, workspace, { errors: invalid, form }, 400);
      const once = await onceForForm(
        deps,
        request,
        `webhook:${workspace.id}:${access.user.id}`,
        () =>
          createSubscription(
            hooks,
            workspace.id,
            body as CreateSubscriptionBody,
            userSourceOf(request, access.user),
          ),
        (result) => result.ok,
      );
      if (once.kind === 'sent_before') {
        const message = sentBeforeMessage(
          once,
          'This form was sent already, and the subscription it created is in the list. Its signing secret was ' +
            'shown once: if you did not copy it, rotate the secret on the subscription’s page.',
        );
        return listPage(request, reply, workspace, { errors: [{ message }] }, 409);
      }
      const created = once.result;
      if (!created.ok) {
        if (created.error.code === 'not_found') return sendNotFound(request, reply);
        const { error, status, code } = refusalOf(created.error, deps.config.baseUrl, workspace.id);
        return listPage(request, reply, workspace, { errors: [error], errorCode: code, form }, status);
      }
      return listPage(request, reply, workspace, { created: created.value }, 201);
    },
  );

  app.get<HookParams>(
    '/integrations/webhooks/:hookId',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const found = await managedSubscription(request, reply);
      if (!found) return reply;
      return detailPage(request, reply, found.workspace, found.subscription);
    },
  );

  app.post<HookParams>(
    '/integrations/webhooks/:hookId/event-types',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const found = await managedSubscription(request, reply);
      if (!found) return reply;
      const { workspace, subscription, source } = found;
      const eventTypes = fieldValues(request, 'event_types');
      const body = { event_types: eventTypes };
      const invalid = schemaErrors(UpdateSubscriptionBody, body, FIELD_ERRORS);
      if (invalid.length > 0) {
        return detailPage(request, reply, workspace, subscription, { errors: invalid, eventTypes }, 400);
      }
      const updated = await updateSubscription(
        hooks,
        workspace.id,
        subscription.id,
        body as UpdateSubscriptionBody,
        source,
      );
      if (!updated.ok) return sendNotFound(request, reply);
      return reply.redirect(detailUrl(workspace, subscription.id), 303);
    },
  );

  for (const [action, status] of [
    ['pause', 'disabled'],
    ['resume', 'enabled'],
  ] as const) {
    app.post<HookParams>(
      `/integrations/webhooks/:hookId/${action}`,
      { config: { workspaceRole: 'manage' } },
      async (request, reply) => {
        const found = await managedSubscription(request, reply);
        if (!found) return reply;
        const { workspace, subscription, source } = found;
        const updated = await updateSubscription(hooks, workspace.id, subscription.id, { status }, source);
        if (!updated.ok) {
          if (updated.error.code === 'not_found') return sendNotFound(request, reply);
          const refusal = refusalOf(updated.error, deps.config.baseUrl, workspace.id);
          const extra = { errors: [refusal.error], errorCode: refusal.code };
          return detailPage(request, reply, workspace, subscription, extra, refusal.status);
        }
        return reply.redirect(detailUrl(workspace, subscription.id), 303);
      },
    );
  }

  app.post<HookParams>(
    '/integrations/webhooks/:hookId/rotate-secret',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const found = await managedSubscription(request, reply);
      if (!found) return reply;
      const { workspace, subscription, source } = found;
      const grace = GRACE_OPTIONS.find((option) => option.value === field(request, 'grace'));
      const body = { grace_period_seconds: grace?.seconds };
      const invalid = grace ? schemaErrors(RotateSecretBody, body, FIELD_ERRORS) : [GRACE_ERROR];
      if (invalid.length > 0)
        return detailPage(request, reply, workspace, subscription, { errors: invalid }, 400);
      const once = await onceForForm(
        deps,
        request,
        `webhook-rotation:${subscription.id}:${source.actor.userId ?? ''}`,
        () => rotateSecret(hooks, workspace.id, subscription.id, body, source),
        (result) => result.ok,
      );
      if (once.kind === 'sent_before') {
        // A second rotation would replace the secret just shown, which then would not sign at all.
        const message = sentBeforeMessage(
          once,
          'This form was sent already: the secret was rotated once, and the new secret was shown once. ' +
            'If you did not copy it, rotate again.',
        );
        return detailPage(request, reply, workspace, subscription, { errors: [{ message }] }, 409);
      }
      const rotated = once.result;
      if (!rotated.ok) return sendNotFound(request, reply);
      const { secret, ...rotatedSubscription } = rotated.value;
      return detailPage(request, reply, workspace, rotatedSubscription, { secret });
    },
  );

  app.post<HookParams>(
    '/integrations/webhooks/:hookId/delete',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const found = await managedSubscription(request, reply);
      if (!found) return reply;
      const { workspace, subscription, source } = found;
      const deleted = await deleteSubscription(hooks, workspace.id, subscription.id, source);
      if (!deleted.ok) return sendNotFound(request, reply);
      return reply.redirect(listUrl(workspace), 303);
    },
  );

  app.post<DeliveryParams>(
    '/integrations/webhooks/:hookId/deliveries/:deliveryId/redeliver',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const found = await managedSubscription(request, reply);
      if (!found) return reply;
      const { workspace, subscription } = found;
      const deliveryId = request.params.deliveryId;
      if (!isIdInput(deliveryId)) return sendNotFound(request, reply);
      const redelivered = await redeliver(hooks, workspace.id, subscription.id, deliveryId);
      if (!redelivered.ok) {
        if (redelivered.error.code === 'not_found') return sendNotFound(request, reply);
        const { error, status, code } = refusalOf(redelivered.error, deps.config.baseUrl, workspace.id);
        return detailPage(
          request,
          reply,
          workspace,
          subscription,
          { errors: [error], errorCode: code },
          status,
        );
      }
      return reply.redirect(`${detailUrl(workspace, subscription.id)}#deliveries`, 303);
    },
  );
}
