import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
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
import { PROBLEM_ERRORS, unreadableRequest } from './problem.ts';
import { logRequestCompleted } from './request-logger.ts';
import { routeHooks } from './route-hooks.ts';

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

function headersOfEveryResponse(https: boolean): Record<string, string> {
  return https ? { ...SECURITY_HEADERS, ...HSTS } : SECURITY_HEADERS;
}

export interface HttpBasicsOptions {
  https: boolean;
  /** The error format of the surface a URL belongs to (REST problems outside the protocols). */
  surfaceFor: (url: string) => ErrorSurface;
  /** Answers an unknown path in another format (the app's HTML page for browsers), or leaves it to problem+json. */
  notFoundPage?: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> | undefined;
  /** Likewise for a method the path does not take (a browser reopening the address of a form's answer). */
  methodNotAllowedPage?: (
    request: FastifyRequest,
    reply: FastifyReply,
    allowed: string[],
  ) => Promise<FastifyReply> | undefined;
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
  const notFound = (request: FastifyRequest, reply: FastifyReply) =>
    options.notFoundPage?.(request, reply) ??
    sendServiceError(request, reply, options.surfaceFor(request.url), { code: 'not_found' });
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      methodsByRoute.on(method as HTTPMethod, route.url, () => {});
    }
    // `/tasks/` matches `/tasks/:id` with an empty id, which names nothing: not found, rather
    // than a complaint about the id's length.
    if (route.url.includes(':')) {
      route.preValidation = [
        (request, reply, done) => {
          const params = request.params as Record<string, string | undefined>;
          for (const name in params) {
            if (params[name] === '') {
              notFound(request, reply);
              return;
            }
          }
          done();
        },
        ...routeHooks(route.preValidation),
      ];
    }
  });

  // Both hooks take a callback instead of being async: they run on every request and await
  // nothing, so a promise each would only cost time.
  const everyResponse = headersOfEveryResponse(options.https);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('request-id', request.id);
    reply.headers(everyResponse);
    done();
  });

  // Route patterns, never raw URLs: a URL can carry a checkout session id or an invitation token.
  app.addHook('onResponse', (request, reply, done) => {
    logRequestCompleted(request.log, {
      method: request.method,
      route: request.routeOptions.url ?? '(no route)',
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    });
    done();
  });

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    // A route matched only with an empty parameter (`/tasks/` as `/tasks/:id`) names nothing.
    const allowed = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].filter((method) => {
      if (method === request.method) return false;
      const found = methodsByRoute.find(method as 'GET', path);
      return found !== null && !Object.values(found.params).includes('');
    });
    const surface = options.surfaceFor(request.url);
    if (allowed.length > 0)
      return (
        options.methodNotAllowedPage?.(request, reply, allowed) ??
        sendServiceError(request, reply, surface, { code: 'method_not_allowed', allowed })
      );
    return notFound(request, reply);
  });

  app.setErrorHandler(errorHandlerFor(PROBLEM_ERRORS));
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot take (bad percent-encoding, a path segment
 * over the limit) is answered in the format of the surface it was meant for, or by `page` (the
 * app's error page for a browser).
 */
export function answerUnroutableUrl(options: {
  https: boolean;
  surfaceFor: (url: string) => ErrorSurface;
  page?: (
    error: FastifyError,
    request: FastifyRequest,
    reply: FastifyReply,
  ) => Promise<FastifyReply> | undefined;
}) {
  const everyResponse = headersOfEveryResponse(options.https);
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // The router refused the URL before the hooks that set these ran.
    reply.header('request-id', request.id);
    reply.headers(everyResponse);
    return (
      options.page?.(error, request, reply) ??
      errorHandlerFor(options.surfaceFor(request.url))(error, request, reply)
    );
  };
}

const CLIENT_ERRORS: Record<string, { status: number; message: string }> = {
  HPE_HEADER_OVERFLOW: { status: 431, message: 'The request line and headers are larger than allowed.' },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, message: 'The request took too long to arrive.' },
};

/**
 * Fastify's `clientErrorHandler`: Node's HTTP parser refused the bytes before there was a request
 * (headers over the size limit, a malformed request line or header, a request too slow to
 * arrive). Which surface it was meant for is unknown, so it is REST's `bad_request` problem, with
 * a Request-Id and the headers every response carries, and the connection closes.
 */
export function clientErrorAnswer(options: { https: boolean }) {
  const everyResponse = Object.entries(headersOfEveryResponse(options.https)).map(
    ([name, value]) => `${name}: ${value}`,
  );
  return function answerClientError(
    this: FastifyInstance,
    error: Error & { code?: string },
    socket: Duplex,
  ): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // Only the code: Node's error carries the raw bytes received, credentials included.
    this.log.debug({ code: error.code }, 'unreadable request refused before routing');
    // Node's own rule: no answer while a response of an earlier request on this connection is
    // part-written (its bytes would be corrupted), only the close.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } | null })._httpMessage;
    if (!socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const { status, message } = CLIENT_ERRORS[error.code ?? ''] ?? {
      status: 400,
      message: 'The request could not be read as HTTP.',
    };
    const requestId = `req_${randomUUID()}`;
    const body = JSON.stringify(unreadableRequest({ id: requestId }, status, message));
    const head = [
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}`,
      'content-type: application/problem+json',
      `content-length: ${Buffer.byteLength(body)}`,
      `request-id: ${requestId}`,
      ...everyResponse,
      'connection: close',
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
  };
}
