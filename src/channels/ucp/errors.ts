import type { SessionStatus } from '../../checkout/index.ts';
import type { ErrorSurface } from '../../http/errors.ts';
import { jsonPathIssue, type ValidationIssue } from '../../http/validation.ts';
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

/** Each schema violation as a UCP message pointing at the field. */
export function validationMessages(issues: readonly ValidationIssue[]): UcpErrorMessage[] {
  return issues.map((issue) => {
    const { code, path, text } = jsonPathIssue(issue);
    return errorMessage(code, text, { path });
  });
}

const TOO_LARGE = 'The request body is larger than allowed.';

/** UCP's wording of every service error: an error_response with one message per problem. */
export const UCP_ERRORS: ErrorSurface = {
  words: {
    invalid_request: ({ issues }, { status }) => errorReply(status, validationMessages(issues)),
    invalid_json: (_, { status }) => failure(status, 'invalid_json', 'The request body is not valid JSON.'),
    invalid_url: (_, { status }) => failure(status, 'invalid_url', 'The URL is not validly percent-encoded.'),
    invalid_multipart: (_, { status }) =>
      failure(status, 'invalid_request', 'The request could not be read.'),
    unreadable_request: ({ message }, { status }) => failure(status, 'invalid_request', message),
    not_found: (_, { status }) =>
      errorReply(status, [errorMessage('not_found', 'No such resource.', { severity: 'unrecoverable' })]),
    method_not_allowed: ({ allowed }, { status }) =>
      failure(status, 'method_not_allowed', `Use ${allowed.join(' or ')} on this path.`),
    body_too_large: (_, { status }) => failure(status, 'body_too_large', TOO_LARGE),
    file_too_large: (_, { status }) => failure(status, 'body_too_large', TOO_LARGE),
    too_many_parts: (_, { status }) => failure(status, 'body_too_large', TOO_LARGE),
    uri_too_long: (_, { status }) =>
      failure(status, 'uri_too_long', 'A path segment of the URL is longer than allowed.'),
    unsupported_media_type: (_, { status }) =>
      failure(status, 'unsupported_media_type', 'Send the request body as application/json.'),
    rate_limited: ({ retryAfterSeconds }, { status }) =>
      failure(
        status,
        'rate_limited',
        `Too many requests from this address; retry in ${retryAfterSeconds} s.`,
      ),
    internal_error: (_, { status }) =>
      failure(status, 'internal_error', 'Something went wrong on our side; retry later.'),
    insufficient_storage: (_, { status }) =>
      failure(status, 'insufficient_storage', 'There is no room to store this; try again later.'),
    storage_unavailable: ({ retryAfterSeconds }, { status }) =>
      failure(
        status,
        'storage_unavailable',
        `Storage is unavailable for now; retry in ${retryAfterSeconds} s.`,
      ),
  },
};

/** An error_response with one recoverable message. */
function failure(status: number, code: string, content: string): UcpReply {
  return errorReply(status, [errorMessage(code, content)]);
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
