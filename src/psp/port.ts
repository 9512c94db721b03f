/**
 * What the service needs from a payment provider: charge a shared payment token once (the agent
 * channels), and hosted checkouts with their signed events (the app's Billing page).
 */
export interface PaymentProvider extends CheckoutProvider {
  /**
   * Charges `token` for `amount` under `idempotencyKey`. Calling again with the same key and
   * request returns the first outcome without a second charge. Never throws for a decline.
   */
  charge(request: ChargeRequest): Promise<ChargeOutcome>;
  retrievePaymentIntent(id: string): Promise<PaymentIntentSummary | undefined>;
}

export interface ChargeRequest {
  amount: number;
  currency: 'usd';
  token: string;
  idempotencyKey: string;
  metadata: Record<string, string>;
}

export type ChargeOutcome =
  | { status: 'succeeded'; paymentIntentId: string; amount: number; currency: string }
  | {
      status: 'declined';
      /** The provider's decline code (`generic_decline`, `insufficient_funds`, ...) or, for a token it refused, its error code. */
      declineCode: string;
      message: string;
      paymentIntentId?: string;
    }
  | { status: 'requires_action'; paymentIntentId: string }
  /** Nothing is known to be charged: retrying under the same key is safe and may be needed. */
  | { status: 'failed'; retryable: boolean; reason: string };

export interface PaymentIntentSummary {
  id: string;
  status: string;
  amount: number;
  currency: string;
  metadata: Record<string, string>;
}

/**
 * The provider could not be reached or failed on its side (a timeout, 5xx, rate limit): nothing
 * is known to have changed and trying again later may succeed. The checkout calls throw it; any
 * other error they throw is the provider refusing the request (our credentials or parameters).
 */
export class ProviderUnavailableError extends Error {
  constructor(cause: unknown) {
    super('the payment provider is unavailable', { cause });
    this.name = 'ProviderUnavailableError';
  }
}

/**
 * A one-time payment at the provider's hosted page (its Checkout Sessions API). The app's Billing
 * page starts one per purchase; the provider redirects back and sends signed events.
 */
export interface CheckoutProvider {
  /** The origin of the provider's hosted payment pages (the app's CSP lets its forms lead there). */
  readonly checkoutOrigin: string;
  createCheckoutSession(request: CheckoutSessionRequest): Promise<CheckoutSessionSummary>;
  /** Undefined when the provider knows no session of this id. */
  retrieveCheckoutSession(id: string): Promise<CheckoutSessionSummary | undefined>;
  /** Ends an open session; undefined when it is not open any more (paid or expired already). */
  expireCheckoutSession(id: string): Promise<CheckoutSessionSummary | undefined>;
  /**
   * Checks the provider's signature over the raw body with the webhook secret; `receivedAt` is
   * the service's clock, against which a stale timestamp is refused.
   */
  verifyEvent(
    rawBody: string | Buffer,
    signatureHeader: string | undefined,
    receivedAt: Date,
  ): Promise<VerifiedEvent>;
}

export interface CheckoutSessionRequest {
  amount: number;
  currency: 'usd';
  name: string;
  description: string;
  /** May contain `{CHECKOUT_SESSION_ID}`, which the provider replaces on the redirect. */
  successUrl: string;
  cancelUrl: string;
  clientReferenceId: string;
  customerEmail: string;
  metadata: Record<string, string>;
  idempotencyKey: string;
}

export interface CheckoutSessionSummary {
  id: string;
  status: 'open' | 'complete' | 'expired';
  /** The provider's `payment_status` is `paid`: the money is taken. */
  paid: boolean;
  amountTotal: number | null;
  currency: string | null;
  metadata: Record<string, string>;
  clientReferenceId: string | null;
  /** The payment's reference at the provider once paid. */
  paymentIntentId: string | null;
  /** The hosted page while the session is open. */
  url: string | null;
}

export type VerifiedEvent =
  | {
      ok: true;
      id: string;
      type: string;
      /** The session the event is about, for `checkout.session.*` events. */
      checkoutSession: CheckoutSessionSummary | undefined;
    }
  | { ok: false; reason: string };
