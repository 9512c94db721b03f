import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';
import { orderLinkHolder } from '../../audit/index.ts';
import { PLANS } from '../../catalog/index.ts';
import { findOrderByPageLink, type Order } from '../../purchase/index.ts';
import { maskEmail } from '../../shared/redact.ts';
import {
  findPurchaseOwnerInvitation,
  getWorkspace,
  INVITATIONS_PER_ADDRESS_PER_HOUR,
  type OwnerResendError,
  resendPurchaseOwnerInvitation,
} from '../../workspace/index.ts';
import { auditSourceOf } from '../audit.ts';
import { field } from '../forms.ts';
import { sendNotFound, sendPage } from '../render.ts';
import type { RouteDeps } from './deps.ts';
import { minutesUntil } from './sign-in.ts';

type Params = { Params: { orderId: string } };

/**
 * The link's key must never leave the page: no referrer to anything it links to (the guard
 * accepts its form by `Sec-Fetch-Site`), and no search engine keeps it.
 */
const keepLinkPrivate: onSendHookHandler = async (_request, reply, payload) => {
  reply.header('referrer-policy', 'no-referrer').header('x-robots-tag', 'noindex, nofollow');
  return payload;
};

/** `pi_3Pq…f9Xz`: enough to match the payment in a statement, not the whole reference. */
function maskReference(reference: string): string {
  return reference.length <= 12
    ? `${reference.slice(0, 3)}…`
    : `${reference.slice(0, 6)}…${reference.slice(-4)}`;
}

async function orderPage(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  order: Order,
  key: string,
  outcome: { notice?: string; errors?: { message: string }[]; status?: number } = {},
) {
  const workspace = await getWorkspace(deps.db, order.workspaceId);
  const invitation = workspace
    ? await findPurchaseOwnerInvitation(deps.db, deps.clock.now(), workspace.id)
    : undefined;
  return sendPage(
    request,
    reply,
    'order',
    {
      title: `Order ${order.id}`,
      noindex: true,
      order,
      key,
      planName: PLANS[order.plan].name,
      reference: maskReference(order.paymentIntentId),
      workspaceExists: workspace !== undefined,
      invitation: invitation && { ...invitation, email: maskEmail(invitation.email) },
      canResend:
        invitation !== undefined && invitation.status !== 'accepted' && invitation.status !== 'withdrawn',
      resendsPerHour: INVITATIONS_PER_ADDRESS_PER_HOUR,
      notice: outcome.notice,
      errors: outcome.errors ?? [],
    },
    outcome.status ?? 200,
  );
}

function queryKey(request: FastifyRequest): string {
  const { key } = request.query as { key?: unknown };
  return typeof key === 'string' ? key : '';
}

/**
 * The order page: reachable only through the link the checkout channels publish
 * (`/orders/{id}?key=...`); anything else, a wrong key included, is the app's 404.
 */
export function orderRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<Params>('/orders/:orderId', { onSend: keepLinkPrivate }, async (request, reply) => {
    const key = queryKey(request);
    const order = await findOrderByPageLink(deps.db, deps.orderLinks, request.params.orderId, key);
    if (!order) return sendNotFound(request, reply);
    return orderPage(deps, request, reply, order, key);
  });

  app.post<Params>('/orders/:orderId/invitation', { onSend: keepLinkPrivate }, async (request, reply) => {
    const key = field(request, 'key');
    const order = await findOrderByPageLink(deps.db, deps.orderLinks, request.params.orderId, key);
    if (!order) return sendNotFound(request, reply);
    const result = await resendPurchaseOwnerInvitation(
      deps.db,
      { clock: deps.clock, baseUrl: deps.config.baseUrl },
      order.workspaceId,
      auditSourceOf(request, orderLinkHolder(order.channel)),
    );
    if (result.ok) {
      return orderPage(deps, request, reply, order, key, {
        notice: `A fresh invitation is on its way to ${maskEmail(result.value.email)}. Earlier links no longer work.`,
      });
    }
    const { message, status } = resendFailure(result.error);
    return orderPage(deps, request, reply, order, key, { errors: [{ message }], status });
  });
}

function resendFailure(error: OwnerResendError): { message: string; status: number } {
  switch (error.code) {
    case 'too_many':
      return {
        message: `Several invitations were sent to this address recently. Try again in ${minutesUntil(error.retryAfterMs)}.`,
        status: 429,
      };
    case 'accepted':
      return { message: 'The invitation was accepted: the workspace has its owner.', status: 409 };
    case 'withdrawn':
      return { message: 'The invitation was withdrawn, so it cannot be sent again.', status: 409 };
    case 'not_found':
      return { message: 'This order has no invitation to send again.', status: 409 };
  }
}
