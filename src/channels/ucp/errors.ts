import type { FastifyError, FastifyReply } from 'fastify';
import type { SessionStatus } from '../../checkout/index.ts';
import { invalidRequestPart, type ValidationIssue } from '../../http/validation.ts';
import type { StoredResponse } from '../../idempotency/index.ts';
import type { IdempotencyErrors } from '../idempotent.ts';
import { UCP_VERSION, UCP_VERSIONS } from './profile.ts';
import type { UcpErrorMessage, UcpErrorResponse } from './schemas.ts';

/** What a UCP route answers: a status, a checkout or error_response body, and extra headers. */
export type UcpReply = StoredResponse;

type Severity = UcpErrorMessage['severity'];

export function errorMessage(
  code: string,
  content: string,
  options: { severity?: Severity; path?: string } = {},
): UcpErrorMessage {
  return {
    type: 'error',
    code,
    ...(options.path ? { path: options.path } : {}),
    content,
    severity: options.severity ?? 'recoverable',
  };
}

export function errorReply(
  status: number,
  messages: UcpErrorMessage[],
  headers?: Record<string, string>,
): UcpReply {
  const body: UcpErrorResponse = { ucp: { version: UCP_VERSION, status: 'error' }, messages };
  return { status, body, ...(headers ? { headers } : {}) };
}

export function sendReply(reply: FastifyReply, answer: UcpReply): FastifyReply {
  for (const [name, value] of Object.entries(answer.headers ?? {})) reply.header(name, value);
  return reply.code(answer.status).send(answer.body);
}

export const notFound = (): UcpReply =>
  errorReply(404, [
    errorMessage('not_found', 'There is no checkout session with this id.', { severity: 'unrecoverable' }),
  ]);

export const EXPIRED = 'This checkout expired one hour after it was created; start a new checkout.';

function whyNotModifiable(status: SessionStatus): string {
  if (status === 'completed') return 'This checkout is completed; it can no longer be changed.';
  if (status === 'expired') return EXPIRED;
  return 'This checkout was canceled; start a new checkout.';
}

/** Update, complete or cancel on a completed, canceled or expired session. */
export const notModifiable = (status: SessionStatus): UcpReply =>
  errorReply(409, [
    errorMessage('checkout_not_modifiable', whyNotModifiable(status), { severity: 'unrecoverable' }),
  ]);

export function busy(retryAfterSeconds: number): UcpReply {
  const content = `A payment for this checkout is under way or its outcome is not known yet; repeat the request in ${retryAfterSeconds} s.`;
  const reply = errorReply(409, [errorMessage('checkout_busy', content)], {
    'retry-after': String(retryAfterSeconds),
  });
  return { ...reply, keep: false };
}

export function conflict(retryAfterSeconds: number): UcpReply {
  const content = `Other requests changed this checkout at the same moment; repeat the request in ${retryAfterSeconds} s.`;
  const reply = errorReply(409, [errorMessage('conflict', content)], {
    'retry-after': String(retryAfterSeconds),
  });
  return { ...reply, keep: false };
}

/** `['line_items', '0', 'item']` -> `$.line_items[0].item` (RFC 9535 shorthand, as in UCP's examples). */
function jsonPath(segments: readonly string[]): string {
  return segments.reduce(
    (path, segment) => (/^\d+$/.test(segment) ? `${path}[${segment}]` : `${path}.${segment}`),
    '$',
  );
}

/** Each schema violation as a UCP message pointing at the field. */
export function validationMessages(issues: readonly ValidationIssue[]): UcpErrorMessage[] {
  return issues.map((issue) => {
    const path = jsonPath(issue.path);
    if (issue.kind === 'missing') return errorMessage('missing', `${path} is required.`, { path });
    const subject = path === '$' ? 'The request body' : path;
    return errorMessage('invalid', `${subject} ${issue.problem}.`, { path });
  });
}

/** What Fastify rejects before a handler runs (schema, JSON syntax, size, media type) in UCP's format. */
export function frameworkErrorReply(error: FastifyError): UcpReply | undefined {
  const invalid = invalidRequestPart(error);
  if (invalid) return errorReply(400, validationMessages(invalid.issues));
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errorReply(413, [errorMessage('body_too_large', 'The request body is larger than allowed.')]);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errorReply(415, [
        errorMessage('unsupported_media_type', 'Send the request body as application/json.'),
      ]);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errorReply(400, [errorMessage('invalid_json', 'The request body is not valid JSON.')]);
    case 'FST_ERR_BAD_URL':
      return errorReply(400, [errorMessage('invalid_url', 'The URL is not validly percent-encoded.')]);
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return errorReply(414, [
        errorMessage('uri_too_long', 'A path segment of the URL is longer than allowed.'),
      ]);
    default:
      if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
        return errorReply(error.statusCode, [errorMessage('invalid_request', error.message)]);
      }
      return undefined;
  }
}

export const internalError = (): UcpReply =>
  errorReply(500, [errorMessage('internal_error', 'Something went wrong on our side; retry later.')]);

export function rateLimited(retryAfterSeconds: number): UcpReply {
  const content = `Too many requests from this address; retry in ${retryAfterSeconds} s.`;
  return errorReply(429, [errorMessage('rate_limited', content)]);
}

export function versionUnsupported(version: string): UcpReply {
  const content = `UCP version ${JSON.stringify(version)} is not supported; this business speaks ${UCP_VERSIONS.join(' and ')}.`;
  return errorReply(422, [errorMessage('version_unsupported', content, { severity: 'unrecoverable' })]);
}

export const malformedAgentHeader = (): UcpReply =>
  errorReply(400, [
    errorMessage(
      'invalid_ucp_agent',
      'The UCP-Agent header is not an RFC 8941 dictionary; send profile="<profile URL>"; version="YYYY-MM-DD".',
    ),
  ]);

export const IDEMPOTENCY_ERRORS: IdempotencyErrors = {
  badKey: (problem) =>
    errorReply(400, [
      errorMessage(
        problem === 'missing' ? 'idempotency_key_missing' : 'idempotency_key_invalid',
        'Send an Idempotency-Key header of 16 to 255 characters (a UUID is suggested) with every POST and PUT.',
      ),
    ]),
  conflict: () =>
    errorReply(409, [
      errorMessage(
        'idempotency_conflict',
        'This Idempotency-Key was already used with a different request body; use a new key for a new request.',
      ),
    ]),
  inFlight: (retryAfterSeconds) =>
    errorReply(409, [
      errorMessage(
        'request_in_progress',
        `The first request with this Idempotency-Key is still running; repeat it in ${retryAfterSeconds} s.`,
      ),
    ]),
};
