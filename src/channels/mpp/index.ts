import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorHandlerFor } from '../../http/errors.ts';
import { problem, sendProblem } from '../../http/problem.ts';
import { applyRateLimit } from '../../http/rate-limit.ts';
import type { Clock } from '../../shared/clock.ts';
import type { ProtocolChannel } from '../channel.ts';
import type { ChannelContext } from '../context.ts';
import {
  DEFAULT_CREDENTIAL_FIELD,
  formatChallenge,
  issueChallenge,
  MIN_SECRET_BYTES,
  type PaidRoute,
  paidRouteFor,
} from './challenge.ts';
import { credentialSource } from './credential.ts';
import { registerMppOpenApi } from './openapi.ts';
import { MPP_OPERATIONS, MPP_PREFIX } from './operations.ts';
import { type PaymentDeps, pay } from './payment.ts';
import { MPP_ERRORS, type PaymentRefusal, paymentProblem, requestProblem } from './problems.ts';
import { paymentReceipt, purchaseResult } from './receipt.ts';
import { PaymentProblem, PurchaseRequestBody, PurchaseResult, ServiceProblem } from './schemas.ts';
import { loadOrCreateChallengeSecret } from './store.ts';

export { MPP_PREFIX } from './operations.ts';
export { deleteOldClaims } from './store.ts';
export { mppWiring } from './wiring.ts';

/** Allow-lists: Fastify serializes exactly these fields (the OpenAPI document names the same schemas). */
const PAID_OPERATION_RESPONSES = {
  200: PurchaseResult,
  400: ServiceProblem,
  402: PaymentProblem,
  503: ServiceProblem,
};

const EXPOSED_HEADERS = 'WWW-Authenticate, Payment-Receipt, Retry-After, Request-Id';
const ALLOWED_REQUEST_HEADERS =
  'Authorization, Payment-Authorization, Content-Type, Accept-Payment, Request-Id';

/**
 * MPP: one `POST /plans/{item}` per sellable item, paid through the HTTP 402 Payment scheme; MPP
 * clients send unset fields as null.
 */
export const MPP_CHANNEL: ProtocolChannel = {
  prefix: MPP_PREFIX,
  routes: mppRoutes,
  errors: MPP_ERRORS,
  nullAsAbsent: true,
  discovery: (app, { config }) => registerMppOpenApi(app, config),
};

async function mppRoutes(app: FastifyInstance, context: ChannelContext): Promise<void> {
  const { checkout, config, limiter } = context;
  // Without a configured challenge-id HMAC key, a generated one kept in the database.
  const secret =
    config.mpp.secret ?? (await loadOrCreateChallengeSecret(checkout.db, checkout.clock.now().getTime()));
  if (Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES) {
    throw new Error(`the MPP challenge secret must be at least ${MIN_SECRET_BYTES} bytes`);
  }
  const realm = config.mpp.realm;
  const deps: PaymentDeps = { purchases: checkout.purchases, secret };
  const scope = app.withTypeProvider<TypeBoxTypeProvider>();
  scope.setErrorHandler(errorHandlerFor(MPP_ERRORS));

  scope.addHook('onRequest', async (_request, reply) => {
    reply.header('access-control-allow-origin', '*');
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    reply.header('cache-control', 'no-store');
  });
  applyRateLimit(scope, limiter, 'mpp', MPP_ERRORS);

  for (const operation of MPP_OPERATIONS) {
    const route = paidRouteFor(operation.item, { realm, networkId: config.psp.networkProfileId });
    scope.options(operation.path, async (_request, reply) => allowPreflight(reply));
    scope.post(
      operation.path,
      { schema: { body: PurchaseRequestBody, response: PAID_OPERATION_RESPONSES } },
      async (request, reply) => {
        const reading = credentialSource(request.headers);
        if (!reading.ok) {
          return sendProblem(
            reply,
            requestProblem('bad-request', problem(request, 400, 'bad-request', reading.detail)),
          );
        }
        const { source, challengeField } = reading;
        // A credential in its own field travels beside the agent's own Authorization: no shared cache may keep the answer.
        if (source.field !== DEFAULT_CREDENTIAL_FIELD) reply.header('cache-control', 'no-store, private');
        const answer = await pay(deps, route, source, request.body);
        switch (answer.kind) {
          case 'paid':
            return reply
              .header('cache-control', 'private')
              .header('payment-receipt', paymentReceipt(answer.order))
              .send(purchaseResult(answer.order, checkout.purchases.orderLinks));
          case 'refused':
            return sendChallenge(
              request,
              reply,
              { route, secret, clock: checkout.clock, credentialField: challengeField },
              answer.refusal,
            );
          case 'unfinished':
            reply.header('retry-after', String(answer.retryAfterSeconds));
            return sendProblem(reply, problem(request, 503, answer.code, answer.detail));
        }
      },
    );
  }
}

function sendChallenge(
  request: FastifyRequest,
  reply: FastifyReply,
  issuer: { route: PaidRoute; secret: string; clock: Clock; credentialField: string },
  refusal: PaymentRefusal,
): FastifyReply {
  const challenge = issueChallenge(issuer.route, issuer.secret, issuer.clock.now(), issuer.credentialField);
  return reply
    .code(402)
    .header('www-authenticate', formatChallenge(challenge))
    .type('application/problem+json')
    .send(paymentProblem(refusal, challenge.id, request.id));
}

function allowPreflight(reply: FastifyReply): FastifyReply {
  return reply
    .code(204)
    .header('access-control-allow-methods', 'POST, OPTIONS')
    .header('access-control-allow-headers', ALLOWED_REQUEST_HEADERS)
    .header('access-control-max-age', '600')
    .send();
}
