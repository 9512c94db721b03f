import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { MaybePromise } from '../shared/maybe-promise.ts';

/**
 * An `onRequest` hook from `admit`, which answers whether the request goes on: false once it has
 * sent the refusal. (A boolean, not the sent reply: a reply is a thenable, so a promise answering
 * one settles only when the answer has been sent, and with nothing.) A callback hook, not an async
 * one: when `admit` answers at once (limits counted in this process, a key verified a moment ago)
 * no promise is made; otherwise the hook waits for it, and a rejection is the request's error.
 */
export function gate(
  admit: (request: FastifyRequest, reply: FastifyReply) => MaybePromise<boolean>,
): onRequestHookHandler {
  return (request, reply, done) => {
    const admitted = admit(request, reply);
    if (admitted instanceof Promise) {
      admitted.then(
        (goesOn) => {
          if (goesOn) done();
        },
        (error: unknown) => done(error instanceof Error ? error : new Error(`request gate failed: ${error}`)),
      );
    } else if (admitted) done();
  };
}
