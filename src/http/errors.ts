import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { invalidRequestPart, type ValidationIssue } from './validation.ts';

/**
 * The errors every surface (REST problems, ACP, UCP, MPP) can answer, in no surface's words:
 * a closed set of codes, each with the data its wording needs. Each surface words every code in
 * one table (`ErrorWords`); a code added here and left out of a table fails type checking.
 * Domain errors that only some surfaces meet stay typed unions of their module (`CheckoutError`,
 * `ComplianceError`), mapped by those surfaces the same way.
 */
export type ServiceError =
  | { code: 'invalid_request'; part: string; issues: ValidationIssue[] }
  | { code: 'invalid_json' }
  | { code: 'invalid_url' }
  | { code: 'invalid_multipart' }
  /** Any other request Fastify refused with a 4xx; its message is Fastify's own, never a stack. */
  | { code: 'unreadable_request'; status: number; message: string }
  | { code: 'not_found' }
  | { code: 'method_not_allowed'; allowed: string[] }
  | { code: 'body_too_large' }
  | { code: 'file_too_large' }
  | { code: 'too_many_parts' }
  | { code: 'uri_too_long' }
  | { code: 'unsupported_media_type' }
  | { code: 'rate_limited'; retryAfterSeconds: number; counted: 'address' | 'API key' }
  | { code: 'internal_error' }
  /** The store has no room for an upload (a full disk or quota) until an operator makes some. */
  | { code: 'insufficient_storage' }
  /** The store failed in a way that may pass (an I/O error, S3's 5xx, the database out of reach). */
  | { code: 'storage_unavailable'; retryAfterSeconds: number };

export type ServiceErrorCode = ServiceError['code'];
export type ServiceErrorOf<C extends ServiceErrorCode> = Extract<ServiceError, { code: C }>;

const STATUS: Record<Exclude<ServiceErrorCode, 'unreadable_request'>, number> = {
  invalid_request: 400,
  invalid_json: 400,
  invalid_url: 400,
  invalid_multipart: 400,
  not_found: 404,
  method_not_allowed: 405,
  body_too_large: 413,
  file_too_large: 413,
  too_many_parts: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  storage_unavailable: 503,
  insufficient_storage: 507,
};

/** The HTTP status of an error, the same on every surface. */
export function statusOf(error: ServiceError): number {
  return error.code === 'unreadable_request' ? error.status : STATUS[error.code];
}

/** What goes on the wire: a status, a body in the surface's format, and any headers of its own. */
export interface WireReply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** How one surface words each error (`status` is `statusOf(error)`). */
export type ErrorWords = {
  [C in ServiceErrorCode]: (
    error: ServiceErrorOf<C>,
    context: { request: FastifyRequest; status: number },
  ) => WireReply;
};

export interface ErrorSurface {
  words: ErrorWords;
  /** A last touch the surface gives every error it words (MPP types its 400s and 500s). */
  finish?: (reply: WireReply) => WireReply;
}

export function sendWire(reply: FastifyReply, answer: WireReply): FastifyReply {
  for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
  return reply.code(answer.status).send(answer.body);
}

/**
 * Answers an error in a surface's format. The headers the model implies are set here for every
 * surface: the request id (also on replies that skip the hooks, such as unroutable URLs),
 * `Retry-After` of a rate limit or of storage unavailable for now, `Allow` of a wrong method.
 */
export function sendServiceError(
  request: FastifyRequest,
  reply: FastifyReply,
  surface: ErrorSurface,
  error: ServiceError,
): FastifyReply {
  const word = surface.words[error.code] as (error: ServiceError, context: object) => WireReply;
  const worded = word(error, { request, status: statusOf(error) });
  reply.header('request-id', request.id);
  if ('retryAfterSeconds' in error) reply.header('retry-after', String(error.retryAfterSeconds));
  if (error.code === 'method_not_allowed') reply.header('allow', error.allowed.join(', '));
  return sendWire(reply, surface.finish ? surface.finish(worded) : worded);
}

/**
 * What Fastify (or a parser) threw, as a service error. Anything it does not recognise is an
 * `internal_error`, logged here with its stack; the stack never reaches a reply.
 */
export function serviceErrorOf(error: FastifyError, request: FastifyRequest): ServiceError {
  const known = frameworkError(error);
  if (known) return known;
  request.log.error({ err: error }, 'unhandled error');
  return { code: 'internal_error' };
}

/** The error handler of a scope that answers in `surface`'s format. */
export function errorHandlerFor(surface: ErrorSurface) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply =>
    sendServiceError(request, reply, surface, serviceErrorOf(error, request));
}

/** What Fastify or a parser refused, as a service error; undefined for anything else. */
export function frameworkError(error: FastifyError): ServiceError | undefined {
  const invalid = invalidRequestPart(error);
  if (invalid) return { code: 'invalid_request', ...invalid };
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'body_too_large' };
    case 'FST_REQ_FILE_TOO_LARGE':
      return { code: 'file_too_large' };
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return { code: 'too_many_parts' };
    // @fastify/multipart: a field named like a prototype property, a JSON part that is not JSON,
    // a body that stopped before its end.
    case 'FST_PROTO_VIOLATION':
    case 'FST_INVALID_JSON_FIELD_ERROR':
    case 'FST_MP_PREMATURE_CLOSE':
      return { code: 'invalid_multipart' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'unsupported_media_type' };
    case 'FST_ERR_BAD_URL':
      return { code: 'invalid_url' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { code: 'uri_too_long' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { code: 'invalid_json' };
    default:
      // Only Fastify's own refusals are the client's doing; an error of a library we call (the
      // payment provider's SDK carries the provider's 401 or 404) is ours, logged as internal.
      if (
        error.code?.startsWith('FST_') &&
        error.statusCode &&
        error.statusCode >= 400 &&
        error.statusCode < 500
      ) {
        return { code: 'unreadable_request', status: error.statusCode, message: error.message };
      }
      return undefined;
  }
}
