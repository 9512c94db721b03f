import type { FastifyInstance } from 'fastify';
import { problem, sendProblem } from '../http/problem.ts';
import { type BillingDeps, fulfilCheckout, markCheckoutExpired } from './service.ts';

/** The provider's events are small (one session object); anything larger is not one of them. */
export const EVENT_BODY_LIMIT_BYTES = 256 * 1024;

export type EventOutcome =
  | { kind: 'refused'; reason: string }
  | { kind: 'handled'; type: string; result: string }
  | { kind: 'ignored'; type: string; why: string };

/**
 * One signed event of the provider. Only a valid signature over the raw body, made within the
 * tolerance of our clock, gets past the first line; then a paid `checkout.session.completed`
 * fulfils (once: a replay finds the checkout fulfilled), `checkout.session.expired` marks an open
 * checkout expired (never a fulfilled one), and anything else is acknowledged and ignored.
 */
export async function handleProviderEvent(
  deps: BillingDeps,
  rawBody: string | Buffer,
  signature: string | undefined,
): Promise<EventOutcome> {
  const event = await deps.psp.verifyEvent(rawBody, signature, deps.clock.now());
  if (!event.ok) return { kind: 'refused', reason: event.reason };
  const session = event.checkoutSession;
  if (!session) return { kind: 'ignored', type: event.type, why: 'not about a checkout session' };
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      if (!session.paid) return { kind: 'ignored', type: event.type, why: 'not paid yet' };
      const fulfilled = await fulfilCheckout(deps, session);
      if (fulfilled.ok) {
        return {
          kind: 'handled',
          type: event.type,
          result: fulfilled.value.fulfilledNow ? 'fulfilled' : 'already_fulfilled',
        };
      }
      return { kind: 'ignored', type: event.type, why: fulfilled.error.code };
    }
    case 'checkout.session.expired':
      return (await markCheckoutExpired(deps, session))
        ? { kind: 'handled', type: event.type, result: 'expired' }
        : { kind: 'ignored', type: event.type, why: 'no open checkout of ours' };
    default:
      return { kind: 'ignored', type: event.type, why: 'not an event the service acts on' };
  }
}

/**
 * `POST /psp/events`, the provider's webhook endpoint. Its own scope keeps the body as the raw
 * text the signature covers. 400 for a missing, forged or stale signature (nothing changes), 200
 * once handled or ignored; an error (the database down) answers 500 so the provider retries.
 */
export async function providerEventRoutes(scope: FastifyInstance, deps: BillingDeps): Promise<void> {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: EVENT_BODY_LIMIT_BYTES },
    (_request, body, done) => done(null, body),
  );
  scope.post('/psp/events', { bodyLimit: EVENT_BODY_LIMIT_BYTES }, async (request, reply) => {
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const signature = request.headers['stripe-signature'];
    const outcome = await handleProviderEvent(
      deps,
      raw,
      typeof signature === 'string' ? signature : undefined,
    );
    if (outcome.kind === 'refused') {
      request.log.warn({ event: 'psp.event_refused', reason: outcome.reason }, 'provider event refused');
      return sendProblem(
        reply,
        problem(request, 400, 'invalid_signature', 'The event signature is not valid.'),
      );
    }
    request.log.info({ event: 'psp.event', ...outcome }, 'provider event');
    return reply.code(200).send({ received: true });
  });
}
