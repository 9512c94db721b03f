import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { MaybePromise } from '../shared/maybe-promise.ts';

/**
 * An `onRequest` hook from `admit`, which answers the reply it sent to refuse the request, or
 * undefined to let it through. A callback hook, not an async one: when `admit` answers at once
 * (limits counted in this process, a key verified a moment ago) no promise is made; otherwise the
 * hook waits for it, and a rejection is the request's error.
 */
export function gate(
  admit: (request: FastifyRequest, reply: FastifyReply) => MaybePromise<FastifyReply | undefined>,
): onRequestHookHandler {
  return (request, reply, done) => {
    const admitted = admit(request, reply);
    if (admitted instanceof Promise) {
      admitted.then((refused) => {
        if (refused === undefined) done();
      }, done);
    } else if (admitted === undefined) done();
  };
}
