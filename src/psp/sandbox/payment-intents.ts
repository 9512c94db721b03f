import type { FastifyInstance } from 'fastify';
import { ApiError, docUrl, invalidRequest, resourceMissing } from './errors.ts';
import {
  bodyParams,
  type Params,
  readBoolean,
  readEnum,
  readObject,
  readString,
  readStringMap,
  requireCurrency,
  requireInteger,
} from './form.ts';
import { consumeToken, MAX_AMOUNT, requireUsableToken, type TokenReference } from './granted-tokens.ts';
import { randomId } from './ids.ts';
import { type ListPage, pageList } from './list.ts';
import type { GrantedTokenRecord, SandboxState } from './state.ts';
import type { ChargeOutcome } from './test-cards.ts';
import type { AutomaticPaymentMethods, LastPaymentError, PaymentIntent, PaymentMethod } from './types.ts';

export const PAYMENT_INTENTS_PATH = '/v1/payment_intents';
const NESTED_TOKEN_PARAM = 'payment_method_data[shared_payment_granted_token]';
const TOP_LEVEL_TOKEN_PARAM = 'shared_payment_granted_token';

type Decline = Extract<ChargeOutcome, { kind: 'decline' }>;

const AUTHENTICATION_NOT_HANDLED: Decline = {
  kind: 'decline',
  code: 'authentication_required',
  declineCode: 'authentication_not_handled',
  message:
    'This payment required an authentication action to complete, but `error_on_requires_action` was set. ' +
    "When you're ready, you can upgrade your integration to handle actions at " +
    'https://stripe.com/docs/payments/payment-intents/upgrade-to-handle-actions.',
};

interface PaymentIntentRequest {
  readonly amount: number;
  readonly currency: string;
  readonly confirm: boolean;
  readonly token: TokenReference | undefined;
  readonly metadata: Readonly<Record<string, string>>;
  readonly automaticPaymentMethods: AutomaticPaymentMethods | null;
  readonly errorOnRequiresAction: boolean;
}

export function registerPaymentIntentRoutes(app: FastifyInstance, state: SandboxState): void {
  app.post(PAYMENT_INTENTS_PATH, async (request) =>
    createPaymentIntent(readPaymentIntentRequest(bodyParams(request.body)), state),
  );
  app.get<{ Params: { readonly id: string } }>(`${PAYMENT_INTENTS_PATH}/:id`, async (request) => {
    const intent = state.getPaymentIntent(request.params.id);
    if (!intent) throw resourceMissing('payment_intent', request.params.id, { status: 404 });
    return intent;
  });
  app.get(PAYMENT_INTENTS_PATH, async (request) => listPaymentIntents(state, bodyParams(request.query)));
}

function readPaymentIntentRequest(params: Params): PaymentIntentRequest {
  const amount = requireInteger(params.amount, 'amount', { min: 1, max: MAX_AMOUNT });
  const currency = requireCurrency(params.currency, 'currency');
  // The sandbox charges shared payment tokens only; an SPT passed as `payment_method` fails like on Stripe.
  const paymentMethod = readString(params.payment_method, 'payment_method');
  if (paymentMethod !== undefined)
    throw resourceMissing('PaymentMethod', paymentMethod, { param: 'payment_method' });
  return {
    amount,
    currency,
    confirm: readBoolean(params.confirm, 'confirm') ?? false,
    token: readTokenReference(params),
    metadata: readStringMap(params.metadata, 'metadata'),
    automaticPaymentMethods: readAutomaticPaymentMethods(params.automatic_payment_methods),
    errorOnRequiresAction: readBoolean(params.error_on_requires_action, 'error_on_requires_action') ?? false,
  };
}

/** Accepts both the current nested spelling and the older top-level one (still sent by mppx). */
function readTokenReference(params: Params): TokenReference | undefined {
  const paymentMethodData = readObject(params.payment_method_data, 'payment_method_data');
  const nested = readString(paymentMethodData.shared_payment_granted_token, NESTED_TOKEN_PARAM);
  const topLevel = readString(params.shared_payment_granted_token, TOP_LEVEL_TOKEN_PARAM);
  if (nested !== undefined && topLevel !== undefined && nested !== topLevel) {
    throw invalidRequest(
      `Pass the shared payment token as either ${NESTED_TOKEN_PARAM} or ${TOP_LEVEL_TOKEN_PARAM}.`,
      {
        code: 'parameter_invalid_string',
        param: TOP_LEVEL_TOKEN_PARAM,
      },
    );
  }
  if (nested !== undefined) return { id: nested, param: NESTED_TOKEN_PARAM };
  if (topLevel !== undefined) return { id: topLevel, param: TOP_LEVEL_TOKEN_PARAM };
  return undefined;
}

function readAutomaticPaymentMethods(value: unknown): AutomaticPaymentMethods | null {
  const settings = readObject(value, 'automatic_payment_methods');
  if (Object.keys(settings).length === 0) return null;
  return {
    enabled: readBoolean(settings.enabled, 'automatic_payment_methods[enabled]') ?? false,
    allow_redirects: readEnum(settings.allow_redirects, 'automatic_payment_methods[allow_redirects]', [
      'always',
      'never',
    ]),
  };
}

function createPaymentIntent(request: PaymentIntentRequest, state: SandboxState): PaymentIntent {
  if (!request.confirm) {
    return saved(state, buildIntent(request, state, { status: unconfirmedStatus(request) }));
  }
  if (!request.token) {
    throw invalidRequest(`Missing required param: ${NESTED_TOKEN_PARAM}.`, {
      code: 'parameter_missing',
      param: NESTED_TOKEN_PARAM,
    });
  }
  const record = requireUsableToken(state, request.token, request.amount, request.currency);
  const paymentMethod = clonePaymentMethod(record, state.nowSeconds());
  const { outcome } = record.testPaymentMethod;
  switch (outcome.kind) {
    case 'approve':
      return approve(request, record, paymentMethod, state);
    case 'authenticate':
      if (request.errorOnRequiresAction)
        return decline(request, paymentMethod, AUTHENTICATION_NOT_HANDLED, state);
      return requireAuthentication(request, paymentMethod, state);
    case 'decline':
      return decline(request, paymentMethod, outcome, state);
  }
}

function unconfirmedStatus(request: PaymentIntentRequest): PaymentIntent['status'] {
  return request.token ? 'requires_confirmation' : 'requires_payment_method';
}

/** Stripe charges a clone of the buyer's payment method that remembers the token it came from. */
function clonePaymentMethod(record: GrantedTokenRecord, nowSeconds: number): PaymentMethod {
  return {
    id: randomId('pm'),
    object: 'payment_method',
    type: 'card',
    card: record.token.payment_method_details.card,
    created: nowSeconds,
    livemode: false,
    shared_payment_granted_token: record.token.id,
  };
}

function approve(
  request: PaymentIntentRequest,
  record: GrantedTokenRecord,
  paymentMethod: PaymentMethod,
  state: SandboxState,
): PaymentIntent {
  const intent = buildIntent(request, state, {
    status: 'succeeded',
    amount_received: request.amount,
    latest_charge: randomId('ch'),
    payment_method: paymentMethod.id,
  });
  consumeToken(state, record, request.amount);
  return saved(state, intent);
}

/** The sandbox cannot complete 3-D Secure, so the token stays unused until a caller gives up on it. */
function requireAuthentication(
  request: PaymentIntentRequest,
  paymentMethod: PaymentMethod,
  state: SandboxState,
): PaymentIntent {
  return saved(
    state,
    buildIntent(request, state, {
      status: 'requires_action',
      next_action: { type: 'use_stripe_sdk', use_stripe_sdk: {} },
      payment_method: paymentMethod.id,
    }),
  );
}

/**
 * Records the failed PaymentIntent and answers 402. A declined attempt does NOT consume the token:
 * no money moved, and Stripe documents deactivation only for hitting the amount limit, expiry,
 * revocation or resolution, so the buyer's agent may retry the same token (e.g. after topping up funds).
 */
function decline(
  request: PaymentIntentRequest,
  paymentMethod: PaymentMethod,
  reason: Decline,
  state: SandboxState,
): never {
  const charge = randomId('ch');
  const error: LastPaymentError = {
    type: 'card_error',
    code: reason.code,
    decline_code: reason.declineCode,
    message: reason.message,
    doc_url: docUrl(reason.code),
    charge,
    payment_method: paymentMethod,
  };
  const intent = saved(
    state,
    buildIntent(request, state, {
      status: 'requires_payment_method',
      last_payment_error: error,
      latest_charge: charge,
    }),
  );
  throw new ApiError(402, { ...error, payment_intent: intent });
}

/** A card payment taken on the hosted checkout page: charged at once and succeeded. */
export function recordCardPayment(
  state: SandboxState,
  payment: {
    readonly amount: number;
    readonly currency: string;
    readonly metadata: Readonly<Record<string, string>>;
  },
): PaymentIntent {
  const request: PaymentIntentRequest = {
    ...payment,
    confirm: true,
    token: undefined,
    automaticPaymentMethods: null,
    errorOnRequiresAction: false,
  };
  return saved(
    state,
    buildIntent(request, state, {
      status: 'succeeded',
      amount_received: payment.amount,
      latest_charge: randomId('ch'),
      payment_method: randomId('pm'),
    }),
  );
}

type IntentOutcomeFields = Pick<PaymentIntent, 'status'> &
  Partial<
    Pick<
      PaymentIntent,
      'amount_received' | 'last_payment_error' | 'latest_charge' | 'next_action' | 'payment_method'
    >
  >;

function buildIntent(
  request: PaymentIntentRequest,
  state: SandboxState,
  outcome: IntentOutcomeFields,
): PaymentIntent {
  const id = randomId('pi');
  return {
    id,
    object: 'payment_intent',
    amount: request.amount,
    amount_capturable: 0,
    amount_received: 0,
    automatic_payment_methods: request.automaticPaymentMethods,
    capture_method: 'automatic',
    client_secret: randomId(`${id}_secret`),
    confirmation_method: 'automatic',
    created: state.nowSeconds(),
    currency: request.currency,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    metadata: request.metadata,
    next_action: null,
    payment_method: null,
    payment_method_types: ['card'],
    ...outcome,
  };
}

function saved(state: SandboxState, intent: PaymentIntent): PaymentIntent {
  state.savePaymentIntent(intent);
  return intent;
}

function listPaymentIntents(state: SandboxState, query: Params): ListPage<PaymentIntent> {
  return pageList(
    {
      resource: 'payment_intent',
      url: PAYMENT_INTENTS_PATH,
      position: (id) => state.paymentIntentPosition(id),
      seek: (seek) => state.seekPaymentIntents(seek),
    },
    query,
  );
}
