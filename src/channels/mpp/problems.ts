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
