import type { PaymentIntent, PaymentMethod } from './types.ts';

export type StripeErrorType = 'api_error' | 'card_error' | 'idempotency_error' | 'invalid_request_error';

/** The object under `"error"` in every Stripe error response. */
export interface StripeErrorBody {
  readonly type: StripeErrorType;
  readonly message: string;
  readonly code?: string | undefined;
  readonly decline_code?: string | undefined;
  readonly param?: string | undefined;
  readonly doc_url?: string | undefined;
  readonly charge?: string | undefined;
  readonly payment_intent?: PaymentIntent | undefined;
  readonly payment_method?: PaymentMethod | undefined;
}

/** Thrown anywhere in request handling; the error handler turns it into `{error: body}` with `status`. */
export class ApiError extends Error {
  readonly status: number;
  readonly body: StripeErrorBody;

  constructor(status: number, body: StripeErrorBody) {
    super(body.message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

export function docUrl(code: string): string {
  return `https://docs.stripe.com/error-codes/${code.replaceAll('_', '-')}`;
}

interface InvalidRequestDetails {
  readonly code?: string | undefined;
  readonly param?: string | undefined;
  readonly status?: number | undefined;
}

export function invalidRequest(message: string, details: InvalidRequestDetails = {}): ApiError {
  const { code, param, status = 400 } = details;
  return new ApiError(status, {
    type: 'invalid_request_error',
    message,
    code,
    param,
    doc_url: code === undefined ? undefined : docUrl(code),
  });
}

export function resourceMissing(resource: string, id: string, details: InvalidRequestDetails = {}): ApiError {
  return invalidRequest(`No such ${resource}: '${id}'`, { ...details, code: 'resource_missing' });
}

export function apiError(status: number, message: string): ApiError {
  return new ApiError(status, { type: 'api_error', message });
}
