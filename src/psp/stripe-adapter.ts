import type Stripe from 'stripe';
import type {
  ChargeOutcome,
  ChargeRequest,
  CheckoutSessionRequest,
  CheckoutSessionSummary,
  PaymentIntentSummary,
  PaymentProvider,
  VerifiedEvent,
} from './port.ts';
import { ProviderUnavailableError } from './port.ts';

export interface StripeAdapterOptions {
  secretKey: string;
  /** e.g. https://api.stripe.com, or the PSP sandbox's http://127.0.0.1:12111. */
  apiBase: URL;
  /** The preview version that knows shared payment tokens, sent on each request. */
  apiVersion: string;
  /** Verifies the provider's signed events (`whsec_…`, from the provider's webhook endpoint). */
  webhookSecret: string;
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

type StripeErrors = typeof Stripe.errors;

let sdk: Promise<typeof Stripe> | undefined;

/**
 * The SDK is loaded with the first call to the provider, not at start-up: it is a tenth of a
 * second of CPU that most processes (tests, the CLI) never use (docs/decisions.md).
 */
function stripeSdk(): Promise<typeof Stripe> {
  sdk ??= import('stripe').then((module) => module.default);
  return sdk;
}

/**
 * Makes an SDK request without the call-site stack the SDK captures for each one
 * (`new Error().stack`, kept to decorate an error it may report later): on the purchase path that
 * capture cost more CPU than the rest of the SDK's work for the charge. The provider's answers,
 * errors included, become outcomes here and no stack of theirs is shown; only an error the SDK
 * itself throws before it sends (a bug) loses its stack.
 */
function withoutCallSiteStack<T>(request: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return request();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

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
    (client ??= stripeSdk().then(
      (StripeSdk) =>
        new StripeSdk(options.secretKey, {
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
    // The provider serves its hosted pages from their own host; the sandbox from its API's.
    checkoutOrigin:
      options.apiBase.hostname === 'api.stripe.com' ? 'https://checkout.stripe.com' : options.apiBase.origin,

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
      try {
        const stripe = await connect();
        const intent = await withoutCallSiteStack(() =>
          stripe.paymentIntents.create(params, {
            idempotencyKey: request.idempotencyKey,
            apiVersion: options.apiVersion,
          }),
        );
        return outcomeOf(intent);
      } catch (error) {
        return outcomeOfError(error, (await stripeSdk()).errors);
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
        if (error instanceof stripe.errors.StripeInvalidRequestError && error.statusCode === 404)
          return undefined;
        throw error;
      }
    },

    async createCheckoutSession(request: CheckoutSessionRequest): Promise<CheckoutSessionSummary> {
      const session = await unavailableWhenTemporary(async (stripe) =>
        stripe.checkout.sessions.create(
          {
            mode: 'payment',
            line_items: [
              {
                quantity: 1,
                price_data: {
                  currency: request.currency,
                  unit_amount: request.amount,
                  product_data: { name: request.name, description: request.description },
                },
              },
            ],
            success_url: request.successUrl,
            cancel_url: request.cancelUrl,
            client_reference_id: request.clientReferenceId,
            customer_email: request.customerEmail,
            metadata: request.metadata,
            payment_intent_data: { metadata: request.metadata },
          },
          { idempotencyKey: request.idempotencyKey },
        ),
      );
      return sessionSummary(session);
    },

    async retrieveCheckoutSession(id: string): Promise<CheckoutSessionSummary | undefined> {
      return unavailableWhenTemporary(async (stripe) => {
        try {
          return sessionSummary(await stripe.checkout.sessions.retrieve(id));
        } catch (error) {
          if (error instanceof stripe.errors.StripeInvalidRequestError && error.statusCode === 404)
            return undefined;
          throw error;
        }
      });
    },

    async expireCheckoutSession(id: string): Promise<CheckoutSessionSummary | undefined> {
      return unavailableWhenTemporary(async (stripe) => {
        try {
          return sessionSummary(await stripe.checkout.sessions.expire(id));
        } catch (error) {
          // The provider refuses to expire a session that is not open (paid, or expired already).
          if (!(error instanceof stripe.errors.StripeInvalidRequestError) || error.statusCode !== 400)
            throw error;
          const session = await stripe.checkout.sessions.retrieve(id);
          if (session.status === 'open') throw error;
          return undefined;
        }
      });
    },

    async verifyEvent(
      rawBody: string | Buffer,
      signatureHeader: string | undefined,
      receivedAt: Date,
    ): Promise<VerifiedEvent> {
      if (!signatureHeader) return { ok: false, reason: 'no Stripe-Signature header' };
      const stripe = await connect();
      let event: Stripe.Event;
      try {
        event = stripe.webhooks.constructEvent(
          rawBody,
          signatureHeader,
          options.webhookSecret,
          EVENT_TOLERANCE_SECONDS,
          undefined,
          receivedAt.getTime(),
        );
      } catch (error) {
        if (error instanceof stripe.errors.StripeSignatureVerificationError)
          return { ok: false, reason: error.message.split('\n')[0] ?? 'bad signature' };
        if (error instanceof SyntaxError) return { ok: false, reason: 'the body is not JSON' };
        throw error;
      }
      const object = event.data?.object as { object?: string } | undefined;
      return {
        ok: true,
        id: event.id,
        type: event.type,
        checkoutSession:
          object?.object === 'checkout.session'
            ? sessionSummary(object as Stripe.Checkout.Session)
            : undefined,
      };
    },
  };

  /**
   * Runs a checkout call, turning what is worth trying again later (no connection, a timeout, rate
   * limited, 409 while the same request is in flight, 5xx: after the SDK's own retries) into
   * ProviderUnavailableError; a refusal is thrown as it is.
   */
  async function unavailableWhenTemporary<T>(call: (stripe: Stripe) => Promise<T>): Promise<T> {
    const stripe = await connect();
    try {
      return await call(stripe);
    } catch (error) {
      const { errors } = stripe;
      const temporary =
        error instanceof errors.StripeConnectionError ||
        error instanceof errors.StripeAPIError ||
        error instanceof errors.StripeRateLimitError ||
        (error instanceof errors.StripeError && (error.statusCode === 409 || (error.statusCode ?? 0) >= 500));
      throw temporary ? new ProviderUnavailableError(error) : error;
    }
  }
}

/** The provider's default: an event signed more than five minutes before it arrives is refused. */
const EVENT_TOLERANCE_SECONDS = 300;

function sessionSummary(session: Stripe.Checkout.Session): CheckoutSessionSummary {
  return {
    id: session.id,
    status: session.status === 'complete' ? 'complete' : session.status === 'expired' ? 'expired' : 'open',
    paid: session.payment_status === 'paid',
    amountTotal: session.amount_total,
    currency: session.currency,
    metadata: session.metadata ?? {},
    clientReferenceId: session.client_reference_id,
    paymentIntentId:
      typeof session.payment_intent === 'string'
        ? session.payment_intent
        : (session.payment_intent?.id ?? null),
    url: session.url,
  };
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

function outcomeOfError(error: unknown, errors: StripeErrors): ChargeOutcome {
  if (error instanceof errors.StripeCardError) {
    return {
      status: 'declined',
      declineCode: error.decline_code || error.code || 'card_declined',
      message: withoutToken(error.message),
      paymentIntentId: error.payment_intent?.id,
    };
  }
  if (error instanceof errors.StripeIdempotencyError) {
    return {
      status: 'failed',
      retryable: false,
      reason: `idempotency key reused with other parameters: ${withoutToken(error.message)}`,
    };
  }
  if (error instanceof errors.StripeInvalidRequestError) {
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
  if (error instanceof errors.StripeAuthenticationError || error instanceof errors.StripePermissionError) {
    return {
      status: 'failed',
      retryable: false,
      reason: `the provider refused our credentials: ${withoutToken(error.message)}`,
    };
  }
  if (error instanceof errors.StripeError) {
    // Connection errors, rate limits, 409 (same key in flight) and 5xx: the outcome is unknown.
    return { status: 'failed', retryable: true, reason: `${error.type}: ${withoutToken(error.message)}` };
  }
  throw error;
}
