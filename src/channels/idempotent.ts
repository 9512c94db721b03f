import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendWire } from '../http/errors.ts';
import {
  checkIdempotencyKey,
  type IdempotencyDeps,
  type KeyProblem,
  runIdempotently,
  type StoredResponse,
} from '../idempotency/index.ts';
import { sha256Hex } from '../shared/ids.ts';
import type { ChannelContext } from './context.ts';

/** How a channel words the idempotency failures in its own error format. */
export interface IdempotencyErrors {
  /** 400: the Idempotency-Key header is missing, shorter than 16 or longer than 255 characters. */
  badKey(problem: KeyProblem): StoredResponse;
  /** The key was used before with another body (ACP 422, UCP 409). */
  conflict(): StoredResponse;
  /**
   * The first request with this key is still running (409; Retry-After is set here): the seconds
   * until it may be taken over, or 1 while the key is changing hands.
   */
  inFlight(retryAfterSeconds: number): StoredResponse;
}

export interface IdempotentRoute {
  channel: 'acp' | 'ucp';
  /** The session the route acts on (its public id; only a hash enters the scope). */
  sessionId?: string;
  errors: IdempotencyErrors;
}

/** The idempotency store of a channel: the checkout's database and clock, the configured takeover time. */
export function idempotencyDepsOf(context: ChannelContext): IdempotencyDeps {
  return {
    db: context.checkout.db,
    clock: context.checkout.clock,
    staleAfterMs: context.config.idempotency.staleAfterMs,
    instance: context.checkout.purchases.instance,
  };
}

/**
 * Answers a state-changing request at most once per Idempotency-Key: the key is scoped to the
 * channel, the route and the session; a repeat with the same body replays the stored status and
 * body with `Idempotent-Replayed: true`; the key is echoed on every answer.
 */
export async function sendIdempotently(
  deps: IdempotencyDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  route: IdempotentRoute,
  handle: () => Promise<StoredResponse>,
): Promise<FastifyReply> {
  const header = request.headers['idempotency-key'];
  const key = Array.isArray(header) ? header[0] : header;
  const problem = checkIdempotencyKey(key);
  if (problem || key === undefined) return sendWire(reply, route.errors.badKey(problem ?? 'missing'));
  reply.header('idempotency-key', key);

  const scope = [
    route.channel,
    request.method,
    request.routeOptions.url,
    route.sessionId ? sha256Hex(route.sessionId) : '-',
  ].join(' ');
  const outcome = await runIdempotently(deps, { scope, key, body: request.body }, handle);
  switch (outcome.kind) {
    case 'fresh':
      return sendWire(reply, outcome.response);
    case 'replayed':
      reply.header('idempotent-replayed', 'true');
      return sendWire(reply, outcome.response);
    case 'conflict':
      return sendWire(reply, route.errors.conflict());
    case 'in_flight':
      reply.header('retry-after', String(outcome.retryAfterSeconds));
      return sendWire(reply, route.errors.inFlight(outcome.retryAfterSeconds));
  }
}
