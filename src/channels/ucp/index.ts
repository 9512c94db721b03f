import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import {
  type CheckoutDeps,
  type CheckoutError,
  type CheckoutSession,
  cancelSession,
  completeSession,
  createSession,
  getSession,
  updateSession,
} from '../../checkout/index.ts';
import type { Config } from '../../config.ts';
import { errorHandlerFor, sendWire } from '../../http/errors.ts';
import { useBoundedJsonParser } from '../../http/json-body.ts';
import { applyRateLimit } from '../../http/rate-limit.ts';
import type { Result } from '../../shared/result.ts';
import type { ProtocolChannel } from '../channel.ts';
import type { ChannelContext } from '../context.ts';
import { idempotencyDepsOf, sendIdempotently } from '../idempotent.ts';
import { requestedVersion } from './agent-header.ts';
import { registerUcpDiscovery } from './discovery.ts';
import {
  busy,
  conflict,
  errorReply,
  IDEMPOTENCY_ERRORS,
  malformedAgentHeader,
  notFound,
  notModifiable,
  UCP_ERRORS,
  type UcpReply,
  versionUnsupported,
} from './errors.ts';
import { recordUcpOrder, registerOrderRoute } from './orders.ts';
import { inRelease, isSupportedVersion, UCP_PATH_PREFIX, UCP_VERSION, type UcpVersion } from './profile.ts';
import { CHECKOUT_RESPONSES, CheckoutInput, CompleteInput, SessionParams } from './schemas.ts';
import { useMessageSignatures, verifiedPlatformOf } from './signatures.ts';
import {
  paymentTokenFrom,
  paymentUnderWayMessage,
  requestErrorMessage,
  sessionInputFrom,
  toCheckout,
} from './translate.ts';

export { type UcpOrderNotifierDeps, ucpOrderNotifier } from './orders.ts';
export {
  listPlatforms,
  parsePlatformKeys,
  registerPlatform,
  removePlatform,
  type UcpPlatform,
} from './platforms.ts';

type SessionResult = Result<CheckoutSession, CheckoutError>;

interface AnswerOptions {
  /** The status of a successful answer (201 for a create). */
  status?: number;
  /** The session the request named; a failed change then answers with its current state. */
  sessionId?: string;
  /**
   * An update: while a payment is under way UCP wants the checkout back unchanged with a
   * recoverable message, not an error envelope.
   */
  isUpdate?: boolean;
}

type UcpScope = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** UCP 2026-08-25 checkout sessions under /api/ucp/v1/checkout-sessions (REST binding). */
export const UCP_CHANNEL: ProtocolChannel = {
  prefix: UCP_PATH_PREFIX,
  routes: ucpRoutes,
  errors: UCP_ERRORS,
  nullAsAbsent: false,
  discovery: (app, { config, signingKeys }) => registerUcpDiscovery(app, config, signingKeys),
};

async function ucpRoutes(scope: FastifyInstance, context: ChannelContext): Promise<void> {
  acceptJsonOnly(scope);
  scope.setErrorHandler(errorHandlerFor(UCP_ERRORS));
  applyRateLimit(scope, context.limiter, 'ucp', UCP_ERRORS);
  scope.addHook('onRequest', checkAgentVersion);
  useMessageSignatures(scope, context);
  scope.addHook('preSerialization', async (request, _reply, payload) =>
    inRelease(payload, context.config, negotiated.get(request) ?? UCP_VERSION),
  );
  registerRoutes(scope.withTypeProvider<TypeBoxTypeProvider>(), context);
}

/**
 * JSON is the only body UCP defines. An empty body counts as none, because agents send
 * `Content-Type: application/json` on the bodiless cancel too.
 */
function acceptJsonOnly(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  useBoundedJsonParser(scope, { emptyIsNone: true });
}

/** The release each request negotiated; a request that names none speaks the newest. */
const negotiated = new WeakMap<FastifyRequest, UcpVersion>();

/**
 * Remote agent profiles are never fetched; the version an agent states in `UCP-Agent` must be
 * one this service speaks (the profile's `version` or a key of its `supported_versions`).
 */
async function checkAgentVersion(request: FastifyRequest, reply: FastifyReply) {
  const header = request.headers['ucp-agent'];
  const agent = requestedVersion(Array.isArray(header) ? header.join(', ') : header);
  if (agent.kind === 'malformed') return sendWire(reply, malformedAgentHeader());
  if (agent.kind === 'requested') {
    if (!isSupportedVersion(agent.version)) return sendWire(reply, versionUnsupported(agent.version));
    negotiated.set(request, agent.version);
  }
}

function registerRoutes(app: UcpScope, context: ChannelContext): void {
  const { checkout, config } = context;
  const idempotency = idempotencyDepsOf(context);
  const sessionRoute = { params: SessionParams, response: CHECKOUT_RESPONSES };
  const idempotent = (sessionId?: string) => ({
    channel: 'ucp' as const,
    sessionId,
    errors: IDEMPOTENCY_ERRORS,
  });
  const respond = (result: SessionResult, options?: AnswerOptions) =>
    answer(checkout, config, result, options);
  const recordOrderOf = async (request: FastifyRequest, checkoutId: string, result: SessionResult) => {
    const order = result.ok ? result.value.order : undefined;
    if (!order) return;
    const platformProfileUrl = verifiedPlatformOf(request);
    await recordUcpOrder(
      checkout.db,
      { orderId: order.id, checkoutId, platformProfileUrl },
      checkout.clock.now(),
    );
  };
  registerOrderRoute(app, { db: checkout.db, orderLinks: checkout.purchases.orderLinks });

  app.post(
    '/checkout-sessions',
    { schema: { body: CheckoutInput, response: CHECKOUT_RESPONSES } },
    async (request, reply) => {
      const input = sessionInputFrom(request.body);
      if (!input.ok) return sendWire(reply, errorReply(400, [input.error]));
      const { itemId, buyer } = input.value;
      return sendIdempotently(idempotency, request, reply, idempotent(), async () => {
        const created = await createSession(checkout, { channel: 'ucp', itemId, buyer: buyer ?? undefined });
        return respond(created, { status: 201 });
      });
    },
  );

  app.get('/checkout-sessions/:id', { schema: sessionRoute }, async (request, reply) => {
    const session = await getSession(checkout, request.params.id, 'ucp');
    // A payment the recovery finished completes the session without a complete request.
    await recordOrderOf(request, request.params.id, session);
    return sendWire(reply, await respond(session));
  });

  // A full replacement: a buyer left out of the body is removed from the session.
  app.put(
    '/checkout-sessions/:id',
    { schema: { ...sessionRoute, body: CheckoutInput } },
    async (request, reply) => {
      const { id } = request.params;
      const input = sessionInputFrom(request.body);
      if (!input.ok) return sendWire(reply, errorReply(400, [input.error]));
      return sendIdempotently(idempotency, request, reply, idempotent(id), async () =>
        respond(await updateSession(checkout, id, 'ucp', input.value), { sessionId: id, isUpdate: true }),
      );
    },
  );

  app.post(
    '/checkout-sessions/:id/complete',
    { schema: { ...sessionRoute, body: CompleteInput } },
    async (request, reply) => {
      const { id } = request.params;
      const token = paymentTokenFrom(request.body, id);
      if (!token.ok) return sendWire(reply, errorReply(400, [token.error]));
      return sendIdempotently(idempotency, request, reply, idempotent(id), async () => {
        const completed = await completeSession(checkout, id, 'ucp', token.value);
        await recordOrderOf(request, id, completed);
        return respond(completed, { sessionId: id });
      });
    },
  );

  app.post('/checkout-sessions/:id/cancel', { schema: sessionRoute }, async (request, reply) => {
    const { id } = request.params;
    return sendIdempotently(idempotency, request, reply, idempotent(id), async () =>
      respond(await cancelSession(checkout, id, 'ucp'), { sessionId: id }),
    );
  });
}

/**
 * The UCP answer to a core result. Where a session exists it is returned with messages saying
 * what went wrong; where none does (or it can no longer change) the error_response envelope is.
 */
async function answer(
  deps: CheckoutDeps,
  config: Config,
  result: SessionResult,
  options: AnswerOptions = {},
): Promise<UcpReply> {
  if (result.ok)
    return {
      status: options.status ?? 200,
      body: toCheckout(result.value, config, deps.purchases.orderLinks),
    };
  const error = result.error;
  switch (error.code) {
    case 'not_found':
      return notFound();
    case 'not_modifiable':
      return notModifiable(error.session.status);
    case 'missing_buyer_email':
      return { status: 200, body: toCheckout(error.session, config, deps.purchases.orderLinks) };
    case 'busy': {
      if (!options.isUpdate || options.sessionId === undefined) return busy(error.retryAfterSeconds);
      const current = await getSession(deps, options.sessionId, 'ucp');
      if (!current.ok) return notFound();
      // The payment may have finished since the update was refused: never show a completed or
      // reopened session as if this update had been applied to it.
      const { status } = current.value;
      if (status === 'ready' || status === 'not_ready') return conflict(error.retryAfterSeconds);
      if (status !== 'paying') return notModifiable(status);
      const message = paymentUnderWayMessage(error.retryAfterSeconds);
      const headers = { 'retry-after': String(error.retryAfterSeconds) };
      return {
        status: 200,
        body: toCheckout(current.value, config, deps.purchases.orderLinks, [message]),
        headers,
        keep: false,
      };
    }
    case 'conflict':
      return conflict(error.retryAfterSeconds);
    case 'payment_under_review':
      return { status: 200, body: toCheckout(error.session, config, deps.purchases.orderLinks), keep: false };
    default: {
      const message = requestErrorMessage(error);
      if (options.sessionId === undefined) return errorReply(400, [message]);
      const current = await getSession(deps, options.sessionId, 'ucp');
      return current.ok
        ? { status: 200, body: toCheckout(current.value, config, deps.purchases.orderLinks, [message]) }
        : notFound();
    }
  }
}
