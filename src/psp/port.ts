/** What the purchase pipeline needs from a payment provider: charge a shared payment token once. */
export interface PaymentProvider {
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
