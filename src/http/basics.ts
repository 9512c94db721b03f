import { randomUUID } from 'node:crypto';
import {
  errorCodes,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import findMyWay, { type HTTPMethod } from 'find-my-way';
import { type ErrorSurface, errorHandlerFor, sendServiceError } from './errors.ts';
import { useBoundedJsonParser } from './json-body.ts';
import { PROBLEM_ERRORS } from './problem.ts';

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
const HSTS = { 'strict-transport-security': 'max-age=31536000; includeSubDomains' };

export interface HttpBasicsOptions {
  https: boolean;
  /** The error format of the surface a URL belongs to (REST problems outside the protocols). */
  surfaceFor: (url: string) => ErrorSurface;
  /** Answers an unknown path in another format (the app's HTML page for browsers), or leaves it to problem+json. */
  notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => FastifyReply | undefined;
}

export function registerHttpBasics(app: FastifyInstance, options: HttpBasicsOptions): void {
  useBoundedJsonParser(app, { emptyIsNone: false });
  // Every surface takes JSON (forms and uploads add their own parsers where they take them).
  // Fastify's default text/plain parser handed a string to JSON schemas: ACP, MPP and REST
  // answered 400 where UCP, which has no such parser, answered 415. A text/plain body is a 415
  // now; an empty one is no body, as clients send it with a bodiless DELETE (fetch with body '').
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') done(null, undefined);
    else done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(request.headers['content-type']), undefined);
  });
  const methodsByRoute = findMyWay();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      methodsByRoute.on(method as HTTPMethod, route.url, () => {});
    }
  });

  // Both hooks take a callback instead of being async: they run on every request and await
  // nothing, so a promise each would only cost time.
  const everyResponse = options.https ? { ...SECURITY_HEADERS, ...HSTS } : SECURITY_HEADERS;
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('request-id', request.id);
    reply.headers(everyResponse);
    done();
  });

  // Route patterns, never raw URLs: a URL can carry a checkout session id or an invitation token.
  app.addHook('onResponse', (request, reply, done) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? '(no route)',
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 10) / 10,
      },
      'request completed',
    );
    done();
  });

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter(
      (method) => method !== request.method && methodsByRoute.find(method as 'GET', path) !== null,
    );
    const surface = options.surfaceFor(request.url);
    if (allowed.length > 0)
      return sendServiceError(request, reply, surface, { code: 'method_not_allowed', allowed });
    return (
      options.notFoundPage?.(request, reply) ??
      sendServiceError(request, reply, surface, { code: 'not_found' })
    );
  });

  app.setErrorHandler(errorHandlerFor(PROBLEM_ERRORS));
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot take (bad percent-encoding, a path segment
 * over the limit) is answered in the format of the surface it was meant for.
 */
export function answerUnroutableUrl(surfaceFor: (url: string) => ErrorSurface) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) =>
    errorHandlerFor(surfaceFor(request.url))(error, request, reply);
}
