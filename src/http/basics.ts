import { randomUUID } from 'node:crypto';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import findMyWay, { type HTTPMethod } from 'find-my-way';
import { useBoundedJsonParser } from './json-body.ts';
import { frameworkProblem, problem, sendProblem } from './problem.ts';

const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

/** Honours a well-formed incoming `Request-Id`; anything else gets a fresh one. */
export function requestIdFrom(request: { headers: Record<string, string | string[] | undefined> }): string {
  const incoming = request.headers['request-id'];
  return typeof incoming === 'string' && REQUEST_ID_PATTERN.test(incoming) ? incoming : `req_${randomUUID()}`;
}

/** Headers every response carries; HTML pages may loosen the content security policy they need. */
const SECURITY_HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
};

export interface HttpBasicsOptions {
  https: boolean;
  /** Answers an unknown path in another format (the app's HTML page for browsers), or leaves it to problem+json. */
  notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined;
}

export function registerHttpBasics(app: FastifyInstance, options: HttpBasicsOptions): void {
  useBoundedJsonParser(app, { emptyIsNone: false });
  const methodsByRoute = findMyWay();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      methodsByRoute.on(method as HTTPMethod, route.url, () => {});
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('request-id', request.id);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) reply.header(name, value);
    if (options.https) reply.header('strict-transport-security', 'max-age=31536000; includeSubDomains');
  });

  // Route patterns, never raw URLs: a URL can carry a checkout session id or an invitation token.
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? '(no route)',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request completed',
    );
  });

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
      (method) => method !== request.method && methodsByRoute.find(method as 'GET', path) !== null,
    );
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendProblem(
        reply,
        problem(request, 405, 'method_not_allowed', `Use ${allowed.join(' or ')} on this path.`),
      );
    }
    return (
      options.notFoundPage?.(request, reply) ??
      sendProblem(reply, problem(request, 404, 'not_found', 'No such resource.'))
    );
  });

  app.setErrorHandler(handleProblemError);
}

/** Errors of every surface without a format of its own, as problem+json; never a stack trace. */
export function handleProblemError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const known = frameworkProblem(error, request);
  if (known) return sendProblem(reply, known);
  request.log.error({ err: error }, 'unhandled error');
  return sendProblem(reply, problem(request, 500, 'internal_error', 'Something went wrong on our side.'));
}
