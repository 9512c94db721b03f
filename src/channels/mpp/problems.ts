import type { ErrorSurface } from '../../http/errors.ts';
import { PROBLEM_ERRORS, type Problem, problem, problemReply } from '../../http/problem.ts';
import type { PaymentProblem } from './schemas.ts';

/** Problem types of draft-httpauth-payment; each is answered with 402 and a fresh challenge. */
export type PaymentProblemCode =
  | 'payment-required'
  | 'malformed-credential'
  | 'invalid-challenge'
  | 'payment-expired'
  | 'invalid-payload'
  | 'verification-failed'
  | 'payment-action-required';

const TITLES: Record<PaymentProblemCode, string> = {
  'payment-required': 'Payment Required',
  'malformed-credential': 'Malformed Credential',
  'invalid-challenge': 'Invalid Challenge',
  'payment-expired': 'Payment Expired',
  'invalid-payload': 'Invalid Payload',
  'verification-failed': 'Verification Failed',
  'payment-action-required': 'Payment Action Required',
};

export const PROBLEM_BASE = 'https://paymentauth.org/problems/';

/** Why a request was not served, in the words the agent will see next to the new challenge. */
export interface PaymentRefusal {
  code: PaymentProblemCode;
  detail: string;
  /** The payment provider's decline code, when the payment itself was declined. */
  declineCode?: string;
}

export function paymentProblem(
  refusal: PaymentRefusal,
  challengeId: string,
  requestId: string,
): PaymentProblem {
  return {
    type: `${PROBLEM_BASE}${refusal.code}`,
    title: TITLES[refusal.code],
    status: 402,
    detail: refusal.detail,
    challengeId,
    ...(refusal.declineCode ? { decline_code: refusal.declineCode } : {}),
    request_id: requestId,
  };
}

/**
 * The draft's problem types whose status is not 402: `bad-request` (400) and
 * `internal-payment-error` (500), titled as mppx titles them. They carry no challenge: nothing was
 * wrong with the payment, and a fresh challenge after a failure on our side could lead an agent
 * to pay a second time.
 */
export type RequestProblemCode = 'bad-request' | 'internal-payment-error';

const REQUEST_TITLES: Record<RequestProblemCode, string> = {
  'bad-request': 'Bad Request',
  'internal-payment-error': 'Internal Payment Error',
};

/** The service's problem under the draft's problem type; its stable `code` is kept. */
export function requestProblem(code: RequestProblemCode, base: Problem): Problem {
  return { ...base, type: `${PROBLEM_BASE}${code}`, title: REQUEST_TITLES[code] };
}

/**
 * MPP's wording of every service error: the REST problems, except that a 400 is typed
 * `bad-request` and a 500 `internal-payment-error`, the draft's types for those statuses.
 */
export const MPP_ERRORS: ErrorSurface = {
  words: {
    ...PROBLEM_ERRORS.words,
    rate_limited: (_, { request, status }) =>
      problemReply(problem(request, status, 'rate_limited', 'Too many requests; retry after Retry-After.')),
  },
  finish: (reply) => {
    const base = reply.body as Problem;
    if (reply.status === 400) return problemReply(requestProblem('bad-request', base));
    if (reply.status === 500) return problemReply(requestProblem('internal-payment-error', base));
    return reply;
  },
};
