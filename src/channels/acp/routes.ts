import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import {
  type CheckoutError,
  type CheckoutSession,
  cancelSession,
  completeSession,
  createSession,
  getSession,
  updateSession,
} from '../../checkout/index.ts';
import { sendWire } from '../../http/errors.ts';
import type { StoredResponse } from '../../idempotency/index.ts';
import { progressOf } from '../../purchase/index.ts';
import type { Result } from '../../shared/result.ts';
import type { ChannelContext } from '../context.ts';
import { type IdempotentRoute, idempotencyDepsOf, sendIdempotently } from '../idempotent.ts';
import { checkoutErrorResponse, idempotencyErrors } from './errors.ts';
import { followAcpOrder, toAcpOrder } from './orders.ts';
import { acceptLegacyItemsKey, toSessionBuyer } from './requests.ts';
import {
  type AcpCheckoutSession,
  CancelSessionBody,
  CompleteSessionBody,
  CreateSessionBody,
  createdSessionResponses,
  SessionParams,
  sessionResponses,
  UpdateSessionBody,
} from './schemas.ts';
import { createSessionPresenter } from './session.ts';

export type AcpScope = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** The five session operations, each a thin translation onto the checkout core. */
export function registerSessionRoutes(scope: AcpScope, context: ChannelContext): void {
  const deps = context.checkout;
  const idempotency = idempotencyDepsOf(context);
  const present = createSessionPresenter(context.config, context.checkout.purchases.orderLinks);
  const answer = (result: Result<CheckoutSession, CheckoutError>, successStatus = 200): StoredResponse => {
    if (result.ok) return { status: successStatus, body: present(result.value) };
    return checkoutErrorResponse(result.error);
  };
  /** A completed session carries the whole order, as it stands now; the agent follows it here. */
  const withOrder = async (result: Result<CheckoutSession, CheckoutError>): Promise<StoredResponse> => {
    const response = answer(result);
    const order = result.ok ? result.value.order : undefined;
    if (!result.ok || !order) return response;
    const progress = await progressOf(deps.db, order);
    await followAcpOrder(deps.db, context.config, result.value.id, order, deps.clock.now());
    const body = response.body as AcpCheckoutSession;
    return {
      ...response,
      body: {
        ...body,
        order: toAcpOrder(progress, result.value.id, deps.purchases.orderLinks, context.config),
      },
    };
  };
  const route = (sessionId?: string): IdempotentRoute => ({
    channel: 'acp',
    ...(sessionId ? { sessionId } : {}),
    errors: idempotencyErrors,
  });

  scope.post(
    '/checkout_sessions',
    {
      schema: { body: CreateSessionBody, response: createdSessionResponses },
      preValidation: acceptLegacyItemsKey,
    },
    async (request, reply) => {
      await sendIdempotently(idempotency, request, reply, route(), async () => {
        const { line_items, buyer } = request.body;
        const created = await createSession(deps, {
          channel: 'acp',
          itemId: line_items[0].id,
          ...(buyer ? { buyer: toSessionBuyer(buyer) } : {}),
        });
        return answer(created, 201);
      });
    },
  );

  scope.get(
    '/checkout_sessions/:id',
    { schema: { params: SessionParams, response: sessionResponses } },
    async (request, reply) => {
      sendWire(reply, await withOrder(await getSession(deps, request.params.id, 'acp')));
    },
  );

  scope.post(
    '/checkout_sessions/:id',
    {
      schema: { params: SessionParams, body: UpdateSessionBody, response: sessionResponses },
      preValidation: acceptLegacyItemsKey,
    },
    async (request, reply) => {
      await sendIdempotently(idempotency, request, reply, route(request.params.id), async () => {
        const { line_items, buyer } = request.body;
        const updated = await updateSession(deps, request.params.id, 'acp', {
          itemId: line_items?.[0].id,
          buyer: buyer ? toSessionBuyer(buyer) : buyer,
        });
        return answer(updated);
      });
    },
  );

  scope.post(
    '/checkout_sessions/:id/complete',
    { schema: { params: SessionParams, body: CompleteSessionBody, response: sessionResponses } },
    async (request, reply) => {
      await sendIdempotently(idempotency, request, reply, route(request.params.id), async () => {
        const { id } = request.params;
        const { payment_data, buyer } = request.body;
        const token = payment_data.instrument.credential.token;
        return withOrder(
          await completeSession(deps, id, 'acp', token, buyer ? toSessionBuyer(buyer) : undefined),
        );
      });
    },
  );

  scope.post(
    '/checkout_sessions/:id/cancel',
    { schema: { params: SessionParams, body: CancelSessionBody, response: sessionResponses } },
    async (request, reply) => {
      await sendIdempotently(idempotency, request, reply, route(request.params.id), async () =>
        answer(await cancelSession(deps, request.params.id, 'acp')),
      );
    },
  );
}
