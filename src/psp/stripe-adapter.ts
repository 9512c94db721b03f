import type Stripe from 'stripe';
import type { ChargeOutcome, ChargeRequest, PaymentIntentSummary, PaymentProvider } from './port.ts';

export interface StripeAdapterOptions {
  secretKey: string;
  /** e.g. https://api.stripe.com, or the PSP sandbox's http://127.0.0.1:12111. */
  apiBase: URL;
  /** The preview version that knows shared payment tokens, sent on each request. */
  apiVersion: string;
  timeoutMs?: number;
  maxNetworkRetries?: number;
}

/** Error codes the provider answers when it refuses the token itself; nothing was charged. */
const TOKEN_REFUSALS = new Set([
  'resource_missing',
  'shared_payment_token_deactivated',
  'shared_payment_token_expired',
  'amount_too_large',
  'payment_method_currency_mismatch',
]);

/**
 * The PaymentProvider port over the provider's official SDK.
 *
 * The SDK retries connection errors, 409 and 5xx under the same idempotency key. Our key is
 * deterministic per payment attempt, so a response marked `Idempotent-Replayed` (the first
 * response was lost, the retry found the charge) is this attempt's own outcome, never a second
 * or foreign payment: it is reported like any other outcome.
 */
export function createStripeAdapter(options: StripeAdapterOptions): PaymentProvider {
  let client: Promise<Stripe> | undefined;
  const connect = () =>
    (client ??= loadSdk().then(
      (Sdk) =>
        new Sdk(options.secretKey, {
          host: options.apiBase.hostname,
          port: options.apiBase.port || (options.apiBase.protocol === 'http:' ? 80 : 443),
          protocol: options.apiBase.protocol === 'http:' ? 'http' : 'https',
          maxNetworkRetries: options.maxNetworkRetries ?? 2,
          timeout: options.timeoutMs ?? 15_000,
          telemetry: false,
          appInfo: { name: 'svc-compliance-workspace' },
        }),
    ));

  return {
    async charge(request: ChargeRequest): Promise<ChargeOutcome> {
      // The GA SDK's types predate shared payment tokens; the preview API version accepts this shape.
      const params = {
        amount: request.amount,
        currency: request.currency,
        confirm: true,
        payment_method_data: { shared_payment_granted_token: request.token },
        automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
        metadata: request.metadata,
      } as unknown as Stripe.PaymentIntentCreateParams;
      const stripe = await connect();
      try {
        const intent = await stripe.paymentIntents.create(params, {
          idempotencyKey: request.idempotencyKey,
          apiVersion: options.apiVersion,
        });
        return outcomeOf(intent);
      } catch (error) {
        return outcomeOfError(error, await loadSdk());
      }
    },

    async retrievePaymentIntent(id: string): Promise<PaymentIntentSummary | undefined> {
      const stripe = await connect();
      try {
        const intent = await stripe.paymentIntents.retrieve(id, {}, { apiVersion: options.apiVersion });
        return {
          id: intent.id,
          status: intent.status,
          amount: intent.amount,
          currency: intent.currency,
          metadata: intent.metadata,
        };
      } catch (error) {
        const Sdk = await loadSdk();
        if (error instanceof Sdk.errors.StripeInvalidRequestError && error.statusCode === 404)
          return undefined;
        throw error;
      }
    },
  };
}

type StripeSdk = typeof import('stripe').default;
let sdk: Promise<StripeSdk> | undefined;

/**
 * The SDK is loaded on the first call to the provider, not at start-up: it is a large module
 * graph, and start-up is measured (docs/decisions.md).
 */
function loadSdk(): Promise<StripeSdk> {
  sdk ??= import('stripe').then((module) => module.default);
  return sdk;
}

/** Provider messages may quote the token; they are stored and shown, so the token is cut out. */
function withoutToken(message: string): string {
  return message.replace(/spt_[A-Za-z0-9_]+/g, 'spt_…');
}

function outcomeOf(intent: Stripe.PaymentIntent): ChargeOutcome {
  switch (intent.status) {
    case 'succeeded':
      return {
        status: 'succeeded',
        paymentIntentId: intent.id,
        amount: intent.amount,
        currency: intent.currency,
      };
    case 'requires_action':
      return { status: 'requires_action', paymentIntentId: intent.id };
    case 'requires_payment_method':
      return {
        status: 'declined',
        declineCode:
          intent.last_payment_error?.decline_code ?? intent.last_payment_error?.code ?? 'card_declined',
        message: withoutToken(intent.last_payment_error?.message ?? 'The card was declined.'),
        paymentIntentId: intent.id,
      };
    default:
      // processing, requires_confirmation, requires_capture, canceled: not a completed charge we can
      // hand out a workspace for; asking again under the same key will tell more.
      return { status: 'failed', retryable: true, reason: `payment intent ${intent.id} is ${intent.status}` };
  }
}

function outcomeOfError(error: unknown, Stripe: StripeSdk): ChargeOutcome {
  if (error instanceof Stripe.errors.StripeCardError) {
    return {
      status: 'declined',
      declineCode: error.decline_code || error.code || 'card_declined',
      message: withoutToken(error.message),
      paymentIntentId: error.payment_intent?.id,
    };
  }
  if (error instanceof Stripe.errors.StripeIdempotencyError) {
    return {
      status: 'failed',
      retryable: false,
      reason: `idempotency key reused with other parameters: ${withoutToken(error.message)}`,
    };
  }
  if (error instanceof Stripe.errors.StripeInvalidRequestError) {
    const aboutToken =
      error.param?.includes('shared_payment_granted_token') || TOKEN_REFUSALS.has(error.code ?? '');
    if (aboutToken) {
      return {
        status: 'declined',
        declineCode: error.code ?? 'invalid_token',
        message: withoutToken(error.message),
      };
    }
    return {
      status: 'failed',
      retryable: false,
      reason: `the provider rejected the request: ${withoutToken(error.message)}`,
    };
  }
  if (
    error instanceof Stripe.errors.StripeAuthenticationError ||
    error instanceof Stripe.errors.StripePermissionError
  ) {
    return {
      status: 'failed',
      retryable: false,
      reason: `the provider refused our credentials: ${withoutToken(error.message)}`,
    };
  }
  if (error instanceof Stripe.errors.StripeError) {
    // Connection errors, rate limits, 409 (same key in flight) and 5xx: the outcome is unknown.
    return { status: 'failed', retryable: true, reason: `${error.type}: ${withoutToken(error.message)}` };
  }
  throw error;
}
