import type { CheckoutError } from '../../checkout/index.ts';
import type { ErrorSurface } from '../../http/errors.ts';
import { jsonPathIssue, type ValidationIssue } from '../../http/validation.ts';
import type { StoredResponse } from '../../idempotency/index.ts';
import type { IdempotencyErrors } from '../idempotent.ts';
import type { AcpError } from './schemas.ts';
import { ACP_STATUS } from './session.ts';

/** Where the (only) item sits in create and update requests. */
const ITEM_PARAM = '$.line_items[0].id';
const EMAIL_PARAM = '$.buyer.email';

/** ACP's flat Error body; the type follows from the status (4xx invalid_request, 503 unavailable). */
export function acpError(
  status: number,
  code: string,
  message: string,
  extra: Pick<AcpError, 'param' | 'supported_versions'> = {},
  headers?: Record<string, string>,
): StoredResponse {
  const body: AcpError = { type: errorType(status), code, message, ...extra };
  return { status, body, ...(headers ? { headers } : {}) };
}

function errorType(status: number): AcpError['type'] {
  if (status < 500) return 'invalid_request';
  return status === 503 ? 'service_unavailable' : 'processing_error';
}

/** The ACP answer to a core error; "retry later" answers are not kept under the Idempotency-Key. */
export function checkoutErrorResponse(error: CheckoutError): StoredResponse {
  switch (error.code) {
    case 'not_found':
      return acpError(404, 'not_found', 'No checkout session has this id.');
    case 'not_modifiable':
      return acpError(
        405,
        'session_not_modifiable',
        `The checkout session is ${ACP_STATUS[error.session.status]}; it can no longer be changed.`,
      );
    case 'unknown_item':
      return acpError(400, 'invalid_item_id', error.message, { param: ITEM_PARAM });
    case 'not_sellable':
      return acpError(400, 'not_sellable', error.message, { param: ITEM_PARAM });
    case 'invalid_email':
      return acpError(400, 'invalid', 'The buyer email address is not valid.', { param: EMAIL_PARAM });
    case 'missing_buyer_email':
      return acpError(
        400,
        'missing',
        "Add the buyer's email address before paying; the workspace invitation is sent there.",
        { param: EMAIL_PARAM },
      );
    case 'busy':
      return {
        ...acpError(
          409,
          'payment_in_progress',
          'A payment for this checkout session is under way or its outcome is not known yet; retry later.',
          {},
          { 'retry-after': String(error.retryAfterSeconds) },
        ),
        keep: false,
      };
    case 'conflict':
      return {
        ...acpError(
          409,
          'conflict',
          'Other requests changed this checkout session at the same moment; repeat the request.',
          {},
          { 'retry-after': String(error.retryAfterSeconds) },
        ),
        keep: false,
      };
    case 'payment_under_review':
      return {
        ...acpError(409, 'payment_under_review', error.session.paymentError?.message ?? ''),
        keep: false,
      };
    case 'payment_failed':
      return acpError(502, 'payment_failed', error.message);
  }
}

export const idempotencyErrors: IdempotencyErrors = {
  badKey: (problem) =>
    problem === 'missing'
      ? acpError(400, 'idempotency_key_required', 'Send an Idempotency-Key header (a UUID) with every POST.')
      : acpError(400, 'invalid_idempotency_key', 'The Idempotency-Key must be 16 to 255 characters long.'),
  conflict: () =>
    acpError(
      422,
      'idempotency_conflict',
      'This Idempotency-Key was already used with a different request body.',
    ),
  inFlight: () =>
    acpError(409, 'idempotency_in_flight', 'A request with this Idempotency-Key is still being processed.'),
};

const UNREADABLE = 'The request could not be read.';
const TOO_LARGE = 'The request body is larger than allowed.';

/** ACP's wording of every service error: its flat Error body (ACP has no multipart bodies). */
export const ACP_ERRORS: ErrorSurface = {
  words: {
    invalid_request: ({ issues }) => validationErrorResponse(issues),
    invalid_json: (_, { status }) => acpError(status, 'invalid_json', 'The request body is not valid JSON.'),
    invalid_url: (_, { status }) => acpError(status, 'invalid_request', UNREADABLE),
    invalid_multipart: (_, { status }) => acpError(status, 'invalid_request', UNREADABLE),
    unreadable_request: (_, { status }) => acpError(status, 'invalid_request', UNREADABLE),
    not_found: (_, { status }) => acpError(status, 'not_found', 'No such resource.'),
    method_not_allowed: ({ allowed }, { status }) =>
      acpError(status, 'method_not_allowed', `Use ${allowed.join(' or ')} on this path.`),
    body_too_large: (_, { status }) => acpError(status, 'request_too_large', TOO_LARGE),
    file_too_large: (_, { status }) => acpError(status, 'request_too_large', TOO_LARGE),
    too_many_parts: (_, { status }) => acpError(status, 'request_too_large', TOO_LARGE),
    uri_too_long: (_, { status }) => acpError(status, 'invalid_request', UNREADABLE),
    unsupported_media_type: (_, { status }) =>
      acpError(status, 'unsupported_media_type', 'Send the request body as application/json.'),
    rate_limited: (_, { status }) =>
      acpError(status, 'rate_limited', 'Too many requests; retry after the time in Retry-After.'),
    internal_error: (_, { status }) =>
      acpError(status, 'internal_error', 'Something went wrong on our side.'),
    insufficient_storage: (_, { status }) =>
      acpError(status, 'insufficient_storage', 'There is no room to store this; try again later.'),
    storage_unavailable: (_, { status }) =>
      acpError(status, 'storage_unavailable', 'Storage is unavailable for now; retry after Retry-After.'),
  },
};

/** The first schema violation, with its place in the body as an RFC 9535 JSONPath. */
function validationErrorResponse(issues: readonly ValidationIssue[]): StoredResponse {
  const issue = issues[0];
  if (!issue) return acpError(400, 'invalid', 'The request body is not valid.');
  const { code, path, text } = jsonPathIssue(issue);
  return acpError(400, code, text, { param: path });
}
