/** Wire shapes of the Stripe objects the sandbox returns (the subset it models). */

export interface CardDetails {
  readonly brand: string;
  readonly display_brand: string;
  readonly country: string;
  readonly exp_month: number;
  readonly exp_year: number;
  readonly funding: 'credit' | 'debit';
  readonly last4: string;
}

export type DeactivatedReason = 'consumed' | 'expired' | 'resolved' | 'revoked';

export interface Money {
  readonly currency: string;
  value: number;
}

export interface GrantedToken {
  readonly id: string;
  readonly object: 'shared_payment.granted_token';
  readonly agent_details: { readonly network_business_profile: string };
  readonly created: number;
  deactivated_at: number | null;
  deactivated_reason: DeactivatedReason | null;
  readonly livemode: false;
  readonly payment_method_details: { readonly type: 'card'; readonly card: CardDetails };
  readonly shared_metadata: Readonly<Record<string, string>>;
  readonly usage_details: { readonly amount_captured: Money };
  readonly usage_limits: {
    readonly currency: string;
    readonly max_amount: number;
    readonly expires_at: number | null;
  };
}

export interface PaymentMethod {
  readonly id: string;
  readonly object: 'payment_method';
  readonly type: 'card';
  readonly card: CardDetails;
  readonly created: number;
  readonly livemode: false;
  readonly shared_payment_granted_token: string;
}

export interface LastPaymentError {
  readonly type: 'card_error';
  readonly code: string;
  readonly decline_code?: string | undefined;
  readonly message: string;
  readonly doc_url: string;
  readonly charge?: string | undefined;
  readonly payment_method: PaymentMethod;
}

export type PaymentIntentStatus =
  | 'requires_payment_method'
  | 'requires_confirmation'
  | 'requires_action'
  | 'succeeded';

export interface NextAction {
  readonly type: 'use_stripe_sdk';
  readonly use_stripe_sdk: Readonly<Record<string, never>>;
}

export interface AutomaticPaymentMethods {
  readonly enabled: boolean;
  readonly allow_redirects?: 'always' | 'never' | undefined;
}

export interface PaymentIntent {
  readonly id: string;
  readonly object: 'payment_intent';
  readonly amount: number;
  readonly amount_capturable: number;
  readonly amount_received: number;
  readonly automatic_payment_methods: AutomaticPaymentMethods | null;
  readonly capture_method: 'automatic';
  readonly client_secret: string;
  readonly confirmation_method: 'automatic';
  readonly created: number;
  readonly currency: string;
  readonly last_payment_error: LastPaymentError | null;
  readonly latest_charge: string | null;
  readonly livemode: false;
  readonly metadata: Readonly<Record<string, string>>;
  readonly next_action: NextAction | null;
  readonly payment_method: string | null;
  readonly payment_method_types: readonly string[];
  readonly status: PaymentIntentStatus;
}

export type CheckoutSessionStatus = 'open' | 'complete' | 'expired';

export interface CheckoutSession {
  readonly id: string;
  readonly object: 'checkout.session';
  readonly mode: 'payment';
  status: CheckoutSessionStatus;
  payment_status: 'unpaid' | 'paid';
  readonly amount_subtotal: number;
  readonly amount_total: number;
  readonly currency: string;
  readonly client_reference_id: string | null;
  readonly customer_email: string | null;
  customer_details: { readonly email: string } | null;
  readonly metadata: Readonly<Record<string, string>>;
  payment_intent: string | null;
  readonly success_url: string;
  readonly cancel_url: string | null;
  /** The hosted page while the session is open; null once it is complete or expired. */
  url: string | null;
  readonly created: number;
  readonly expires_at: number;
  readonly livemode: false;
}

export type SandboxEventType = 'checkout.session.completed' | 'checkout.session.expired';

export interface SandboxEvent {
  readonly id: string;
  readonly object: 'event';
  readonly api_version: string;
  readonly created: number;
  readonly livemode: false;
  readonly pending_webhooks: number;
  readonly request: { readonly id: null; readonly idempotency_key: null };
  readonly type: SandboxEventType;
  readonly data: { readonly object: CheckoutSession };
}
