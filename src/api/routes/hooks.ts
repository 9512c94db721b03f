import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { problem, sendProblem } from '../../http/problem.ts';
import {
  CreateSubscriptionBody,
  createSubscription,
  DeliveriesFilter,
  deleteSubscription,
  getSubscription,
  listDeliveries,
  listSubscriptions,
  RotateSecretBody,
  redeliver,
  rotateSecret,
  SubscriptionsFilter,
  sendTestEvent,
  UpdateSubscriptionBody,
  updateSubscription,
  WebhookAttempt,
  WebhookDelivery,
  type WebhookDeps,
  type WebhookError,
  WebhookSubscription,
  WebhookSubscriptionWithSecret,
  WebhookTestData,
} from '../../webhooks/index.ts';
import { lockWorkspace } from '../../workspace/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { NoContent, responses, sendNotFound, sendPlanLimit } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

const tags = ['Webhooks'];

const DeliveryParams = Type.Object({ id: IdParams.properties.id, delivery_id: IdParams.properties.id });

function sendWebhookError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: WebhookError,
  resource: string,
): FastifyReply {
  switch (error.code) {
    case 'not_found':
      return sendNotFound(request, reply, resource);
    case 'target_refused': {
      const { code, message } = error.refusal;
      return sendProblem(
        reply,
        problem(request, 400, code, `The URL ${message}.`, [{ path: 'body/url', message }]),
      );
    }
    case 'plan_limit_reached':
      return sendPlanLimit(request, reply, error);
    case 'subscription_disabled':
      return sendProblem(
        reply,
        problem(request, 409, error.code, 'The subscription is disabled; enable it first (PATCH status).'),
      );
  }
}

export function hookRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  const hooks: WebhookDeps = { db: deps.db, clock: deps.clock, targets: deps.webhookTargets, lockWorkspace };
  catalog.name({
    WebhookSubscription,
    WebhookSubscriptionWithSecret,
    CreateSubscriptionBody,
    UpdateSubscriptionBody,
    RotateSecretBody,
    WebhookDelivery,
    WebhookAttempt,
  });
  catalog.events(WebhookTestData, 'webhook.test');
  subscriptionRoutes(app, hooks);
  deliveryRoutes(app, hooks);
}

/** Subscribe, list, read, change, rotate the secret, unsubscribe. */
function subscriptionRoutes(app: ApiScope, hooks: WebhookDeps): void {
  app.get(
    '/hooks',
    {
      schema: {
        operationId: 'listHooks',
        summary: 'List webhook subscriptions',
        description:
          'Oldest first. Filter with `status=enabled` or `status=disabled`. Secrets are never listed.',
        tags,
        querystring: listQuery(SubscriptionsFilter),
        response: responses({ 200: pageOf(WebhookSubscription) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'hooks', request.query, (workspaceId, filter, page) =>
        listSubscriptions(hooks, workspaceId, filter, page),
      ),
  );

  app.post(
    '/hooks',
    {
      schema: {
        operationId: 'createHook',
        summary: 'Subscribe a URL to events',
        description:
          'Answers the subscription with its `whsec_` signing secret, shown only this once. The URL must ' +
          'be https and resolve only to public addresses. Deliveries carry Standard Webhooks headers ' +
          '(`webhook-id`, `webhook-timestamp`, `webhook-signature`) and are retried for about a day. ' +
          "Beyond the plan's number of subscriptions: 403 `plan_limit_reached`.",
        tags,
        body: CreateSubscriptionBody,
        response: responses({ 201: WebhookSubscriptionWithSecret }, [403, 409]),
      },
    },
    async (request, reply) => {
      const result = await createSubscription(
        hooks,
        workspaceOf(request),
        request.body,
        auditSourceOf(request),
      );
      if (!result.ok) return sendWebhookError(request, reply, result.error, 'webhook subscription');
      return reply.code(201).send(result.value);
    },
  );

  app.get(
    '/hooks/:id',
    {
      schema: {
        operationId: 'getHook',
        summary: 'Get a webhook subscription',
        tags,
        params: IdParams,
        response: responses({ 200: WebhookSubscription }, [404]),
      },
    },
    async (request, reply) =>
      (await getSubscription(hooks, workspaceOf(request), request.params.id)) ??
      sendNotFound(request, reply, 'webhook subscription'),
  );

  app.patch(
    '/hooks/:id',
    {
      schema: {
        operationId: 'updateHook',
        summary: 'Change a subscription: URL, event types, description, enabled or disabled',
        tags,
        params: IdParams,
        body: UpdateSubscriptionBody,
        response: responses({ 200: WebhookSubscription }, [404]),
      },
    },
    async (request, reply) => {
      const result = await updateSubscription(
        hooks,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok
        ? result.value
        : sendWebhookError(request, reply, result.error, 'webhook subscription');
    },
  );

  app.delete(
    '/hooks/:id',
    {
      schema: {
        operationId: 'deleteHook',
        summary: 'Unsubscribe: delete a subscription and its delivery history',
        tags,
        params: IdParams,
        response: responses({ 204: NoContent }, [404]),
      },
    },
    async (request, reply) => {
      const result = await deleteSubscription(
        hooks,
        workspaceOf(request),
        request.params.id,
        auditSourceOf(request),
      );
      if (!result.ok) return sendWebhookError(request, reply, result.error, 'webhook subscription');
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/hooks/:id/rotate-secret',
    {
      // The body is optional: no body means the default grace period.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        operationId: 'rotateHookSecret',
        summary: 'Replace the signing secret; the old one keeps signing for a grace period',
        description:
          'Answers the new secret, shown only this once. During the grace period every attempt carries ' +
          'two signatures in `webhook-signature`, the new one first.',
        tags,
        params: IdParams,
        body: RotateSecretBody,
        response: responses({ 200: WebhookSubscriptionWithSecret }, [404]),
      },
    },
    async (request, reply) => {
      const result = await rotateSecret(
        hooks,
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok
        ? result.value
        : sendWebhookError(request, reply, result.error, 'webhook subscription');
    },
  );
}

/** What was sent where: test events, the delivery log with its attempts, redelivery. */
function deliveryRoutes(app: ApiScope, hooks: WebhookDeps): void {
  app.post(
    '/hooks/:id/test',
    {
      schema: {
        operationId: 'testHook',
        summary: 'Send a `webhook.test` event to this subscription only',
        tags,
        params: IdParams,
        response: responses({ 202: WebhookDelivery }, [404, 409]),
      },
    },
    async (request, reply) => {
      const result = await sendTestEvent(hooks, workspaceOf(request), request.params.id);
      if (!result.ok) return sendWebhookError(request, reply, result.error, 'webhook subscription');
      return reply.code(202).send(result.value);
    },
  );

  app.get(
    '/hooks/:id/deliveries',
    {
      schema: {
        operationId: 'listHookDeliveries',
        summary: "List a subscription's deliveries with their attempts, status codes and latency",
        description: 'Newest first. Filter with `status`.',
        tags,
        params: IdParams,
        querystring: listQuery(DeliveriesFilter),
        response: responses({ 200: pageOf(WebhookDelivery) }, [404]),
      },
    },
    async (request, reply) => {
      const subscriptionId = request.params.id;
      if (!(await getSubscription(hooks, workspaceOf(request), subscriptionId))) {
        return sendNotFound(request, reply, 'webhook subscription');
      }
      return answerList(
        request,
        reply,
        `hooks/${subscriptionId}/deliveries`,
        request.query,
        (ws, filter, page) => listDeliveries(hooks, ws, subscriptionId, filter, page),
      );
    },
  );

  app.post(
    '/hooks/:id/deliveries/:delivery_id/redeliver',
    {
      schema: {
        operationId: 'redeliverHookDelivery',
        summary: 'Deliver the event of a delivery again (same body, same `webhook-id`)',
        tags,
        params: DeliveryParams,
        response: responses({ 202: WebhookDelivery }, [404, 409]),
      },
    },
    async (request, reply) => {
      const { id, delivery_id: deliveryId } = request.params;
      const result = await redeliver(hooks, workspaceOf(request), id, deliveryId);
      if (!result.ok) return sendWebhookError(request, reply, result.error, 'webhook delivery');
      return reply.code(202).send(result.value);
    },
  );
}
