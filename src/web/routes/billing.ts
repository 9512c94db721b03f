import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  type ReturnOutcome,
  type StartCheckoutError,
  settleReturn,
  startCheckout,
} from '../../billing/index.ts';
import { formatBytes, PLAN_ENTITLEMENTS, PLANS, SELLABLE_ITEMS } from '../../catalog/index.ts';
import { listOrders } from '../../purchase/index.ts';
import { paidTermStart, type Workspace } from '../../workspace/index.ts';
import { field } from '../forms.ts';
import { sendNotFound, sendPage } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

type WorkspaceParams = { Params: { workspaceId: string } };

/** Every order a workspace could have; a workspace buys a term a month at most. */
const ORDERS_SHOWN = 1000;

const CHANNEL_LABELS: Record<string, string> = { acp: 'ACP', ucp: 'UCP', mpp: 'MPP', app: 'App' };

/**
 * Billing for owners and admins, where the term-end emails link: the plan, its term and limits,
 * every order, and the six plan terms to buy. "Buy" starts a hosted checkout at the provider and
 * redirects there; the provider sends the person back to the return page.
 */
/** The provider's checkout ids (`cs_test_…`, 66 characters at Stripe): longer than our own ids. */
const PROVIDER_CHECKOUT_ID = /^cs_[A-Za-z0-9_]{1,250}$/;

export function billingRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<WorkspaceParams>('/billing', { config: { workspaceRole: 'manage' } }, async (request, reply) => {
    const access = accessOf(request);
    return billingPage(deps, request, reply, access.membership.workspace);
  });

  app.post<WorkspaceParams>(
    '/billing/checkout',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const { workspace } = access.membership;
      const started = await startCheckout(deps.billing, {
        workspaceId: workspace.id,
        itemId: field(request, 'item'),
        startedBy: { id: access.user.id, email: access.user.email },
      });
      if (started.ok) return reply.redirect(started.value.url, 303);
      return billingPage(deps, request, reply, workspace, START_REFUSALS[started.error.code]);
    },
  );

  app.get<WorkspaceParams & { Querystring: { checkout?: string } }>(
    '/billing/return',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const checkoutId = request.query.checkout;
      if (typeof checkoutId !== 'string' || !PROVIDER_CHECKOUT_ID.test(checkoutId))
        return sendNotFound(request, reply);
      const { workspace } = access.membership;
      const outcome = await settleReturn(deps.billing, workspace.id, checkoutId);
      if (!outcome) return sendNotFound(request, reply);
      const { status, errorCode, ...view } = returnView(outcome);
      return sendPage(
        request,
        reply,
        'billing-return',
        { title: `Payment · ${workspace.name}`, workspace, errorCode, ...view },
        status,
      );
    },
  );
}

/** What Billing says when no checkout could be started, by the reason's code. */
const NOT_OFFERED = { errors: [{ message: 'Choose one of the plans listed below.' }], status: 400 };
const START_REFUSALS: Record<
  StartCheckoutError['code'],
  { errors: { message: string }[]; status: number; errorCode?: string }
> = {
  unknown_item: NOT_OFFERED,
  not_sellable: NOT_OFFERED,
  provider_unavailable: {
    errors: [
      { message: 'The payment provider could not be reached; nothing was charged. Try again in a moment.' },
    ],
    status: 503,
    errorCode: 'provider_unavailable',
  },
  provider_refused: {
    errors: [
      {
        message:
          'The payment provider refused to start this payment; nothing was charged. Trying again will not help: contact support.',
      },
    ],
    status: 502,
    errorCode: 'provider_refused',
  },
};

/** What the return page says: paid (now or as the next term), or why not, with its status. */
function returnView(
  outcome: ReturnOutcome,
): { result: string; status: number; errorCode?: string } & Record<string, unknown> {
  switch (outcome.kind) {
    case 'paid': {
      const { order } = outcome;
      return {
        result: order.termStartsAt.getTime() <= order.createdAt.getTime() ? 'paid_now' : 'paid_next',
        status: 200,
        planName: PLANS[order.plan].name,
        termStartsAt: order.termStartsAt,
        termEndsAt: order.termEndsAt,
      };
    }
    case 'mismatch':
      return { result: 'mismatch', status: 200 };
    case 'provider_unavailable':
      return { result: 'provider_unavailable', status: 503, errorCode: 'provider_unavailable' };
    case 'unknown_at_provider':
      return { result: 'unknown_at_provider', status: 404, errorCode: 'checkout_not_found' };
    case 'not_paid':
      return { result: outcome.status === 'expired' ? 'expired' : 'not_paid', status: 200 };
  }
}

async function billingPage(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  workspace: Workspace,
  outcome: { errors?: { message: string }[]; status?: number; errorCode?: string } = {},
) {
  const entitlements = PLAN_ENTITLEMENTS[workspace.plan];
  const orders = await listOrders(deps.db, { limit: ORDERS_SHOWN, workspaceId: workspace.id });
  return sendPage(
    request,
    reply,
    'billing',
    {
      title: `Billing · ${workspace.name}`,
      errorCode: outcome.errorCode,
      workspace,
      planName: PLANS[workspace.plan].name,
      nextTerms: workspace.nextTerms.map((term) => ({ ...term, planName: PLANS[term.plan].name })),
      limits: [
        ['Members and pending invitations', String(entitlements.members)],
        ['Active API keys', String(entitlements.apiKeys)],
        ['Webhook subscriptions', String(entitlements.webhookSubscriptions)],
        ['Evidence storage', formatBytes(entitlements.evidenceStorageBytes)],
        ['API requests per minute per key', String(entitlements.apiRequestsPerMinute)],
      ],
      orders: orders.map((order) => ({
        id: order.id,
        channel: CHANNEL_LABELS[order.channel] ?? order.channel.toUpperCase(),
        item: `${PLANS[order.plan].name}, one ${order.term}`,
        amount: order.amount,
        createdAt: order.createdAt,
        reference: order.paymentIntentId,
      })),
      items: SELLABLE_ITEMS.map((item) => ({
        id: item.id,
        name: `${PLANS[item.price.plan].name}, one ${item.price.term}`,
        description: item.description,
        amount: item.price.amount,
      })),
      nextPurchaseStartsAt: startOfNextPurchase(workspace, deps.clock.now()),
      errors: outcome.errors,
    },
    outcome.status ?? 200,
    [deps.billing.psp.checkoutOrigin],
  );
}

/** When a plan bought now starts, if not at once: when the last paid term ends. */
function startOfNextPurchase(workspace: Workspace, now: Date): Date | undefined {
  const last = workspace.nextTerms.at(-1) ?? workspace.currentTerm;
  const startsAt = paidTermStart(workspace.plan, last?.endsAt, now);
  return startsAt > now ? startsAt : undefined;
}
