import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalidRequest, resourceMissing } from './errors.ts';
import type { SandboxEvents } from './events.ts';
import {
  bodyParams,
  type Params,
  readEnum,
  readInteger,
  readObject,
  readString,
  readStringMap,
  requireCurrency,
  requireInteger,
  requireString,
} from './form.ts';
import { MAX_AMOUNT } from './granted-tokens.ts';
import { randomId } from './ids.ts';
import { recordCardPayment } from './payment-intents.ts';
import type { CheckoutLineItem, CheckoutSessionRecord, SandboxState } from './state.ts';
import type { CheckoutSession } from './types.ts';

export const CHECKOUT_SESSIONS_PATH = '/v1/checkout/sessions';
export const HOSTED_PAGE_PATH = '/pay';
export const CHECKOUT_SESSION_ID_PLACEHOLDER = '{CHECKOUT_SESSION_ID}';
const MIN_LIFETIME_SECONDS = 30 * 60;
const MAX_LIFETIME_SECONDS = 24 * 60 * 60;
const MAX_QUANTITY = 999_999;
const MAX_LINE_ITEMS = 100;
const MAX_CLIENT_REFERENCE_LENGTH = 200;
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

interface IdParams {
  readonly id: string;
}

/**
 * Checkout Sessions in `payment` mode: created over the API, paid on the hosted page, expired on
 * request or by themselves at `expires_at` (sandbox clock). Completion and expiry emit events.
 */
export class CheckoutSessions {
  readonly #state: SandboxState;
  readonly #events: SandboxEvents;

  constructor(state: SandboxState, events: SandboxEvents) {
    this.#state = state;
    this.#events = events;
  }

  create(params: Params): CheckoutSession {
    const record = readSessionRequest(params, this.#state.nowSeconds());
    this.#state.saveCheckoutSession(record);
    return record.session;
  }

  /** The session's record with expiry applied as of the sandbox clock. */
  find(id: string): CheckoutSessionRecord | undefined {
    const record = this.#state.checkoutSessionRecord(id);
    if (record && record.session.status === 'open' && record.session.expires_at <= this.#state.nowSeconds()) {
      return this.#expire(record);
    }
    return record;
  }

  require(id: string): CheckoutSessionRecord {
    const record = this.find(id);
    if (!record) throw resourceMissing('checkout.session', id, { status: 404 });
    return record;
  }

  expire(id: string): CheckoutSession {
    const record = this.require(id);
    if (record.session.status !== 'open') {
      throw invalidRequest('Only Checkout Sessions with a status of `open` can be expired.');
    }
    return this.#expire(record).session;
  }

  /** Expires every open session whose `expires_at` has come. */
  expireDue(): void {
    for (const id of this.#state.dueCheckoutSessionIds()) this.find(id);
  }

  /** The buyer paid (a card that was approved, or authenticated): one succeeded PaymentIntent. */
  complete(record: CheckoutSessionRecord, email: string): CheckoutSessionRecord {
    const { session } = record;
    if (session.status !== 'open') return record;
    return this.#state.atomically(() => {
      const intent = recordCardPayment(this.#state, {
        amount: session.amount_total,
        currency: session.currency,
        metadata: record.paymentIntentMetadata,
      });
      session.status = 'complete';
      session.payment_status = 'paid';
      session.payment_intent = intent.id;
      session.customer_details = { email };
      record.pendingAuthentication = null;
      this.#state.saveCheckoutSession(record);
      this.#events.emit('checkout.session.completed', session);
      return record;
    });
  }

  /** A 3-D Secure card awaits the buyer's authentication (or its failure). */
  awaitAuthentication(record: CheckoutSessionRecord, testPaymentMethodId: string, email: string): void {
    record.pendingAuthentication = { testPaymentMethodId, email };
    this.#state.saveCheckoutSession(record);
  }

  abandonAuthentication(record: CheckoutSessionRecord): void {
    record.pendingAuthentication = null;
    this.#state.saveCheckoutSession(record);
  }

  #expire(record: CheckoutSessionRecord): CheckoutSessionRecord {
    return this.#state.atomically(() => {
      record.session.status = 'expired';
      record.pendingAuthentication = null;
      this.#state.saveCheckoutSession(record);
      this.#events.emit('checkout.session.expired', record.session);
      return record;
    });
  }
}

export function registerCheckoutSessionRoutes(app: FastifyInstance, sessions: CheckoutSessions): void {
  app.post(CHECKOUT_SESSIONS_PATH, async (request) =>
    withHostedPageUrl(sessions.create(bodyParams(request.body)), originOf(request)),
  );
  app.get<{ Params: IdParams }>(`${CHECKOUT_SESSIONS_PATH}/:id`, async (request) =>
    withHostedPageUrl(sessions.require(request.params.id).session, originOf(request)),
  );
  app.post<{ Params: IdParams }>(`${CHECKOUT_SESSIONS_PATH}/:id/expire`, async (request) =>
    withHostedPageUrl(sessions.expire(request.params.id), originOf(request)),
  );
}

/** The buyer's way back after paying, with the session id in place of the placeholder. */
export function successRedirect(session: CheckoutSession): string {
  return session.success_url.replaceAll(CHECKOUT_SESSION_ID_PLACEHOLDER, session.id);
}

/**
 * `url` points at this sandbox as the caller reached it, so it is worked out per response rather
 * than stored (a restarted sandbox may listen elsewhere). It is null once the session is not open.
 */
function withHostedPageUrl(session: CheckoutSession, origin: string): CheckoutSession {
  return { ...session, url: session.status === 'open' ? `${origin}${HOSTED_PAGE_PATH}/${session.id}` : null };
}

function originOf(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

function readSessionRequest(params: Params, nowSeconds: number): CheckoutSessionRecord {
  const mode = readEnum(params.mode, 'mode', ['payment', 'setup', 'subscription']);
  if (mode === undefined) throw missing('mode');
  if (mode !== 'payment') {
    throw invalidRequest('The PSP sandbox supports Checkout Sessions in `payment` mode only.', {
      code: 'parameter_invalid_string',
      param: 'mode',
    });
  }
  const { lineItems, currency } = readLineItems(params.line_items);
  const amount = lineItems.reduce((sum, item) => sum + item.unitAmount * item.quantity, 0);
  if (amount < 1) {
    throw invalidRequest("The Checkout Session's total amount due must be at least 1.", {
      code: 'amount_too_small',
      param: 'line_items',
    });
  }
  if (amount > MAX_AMOUNT) {
    throw invalidRequest(`The Checkout Session's total amount due must be at most ${MAX_AMOUNT}.`, {
      code: 'amount_too_large',
      param: 'line_items',
    });
  }
  const successUrl = readRedirectUrl(params.success_url, 'success_url');
  if (successUrl === undefined) throw missing('success_url');
  const created = nowSeconds;
  const paymentIntentData = readObject(params.payment_intent_data, 'payment_intent_data');
  const session: CheckoutSession = {
    id: randomId('cs_test'),
    object: 'checkout.session',
    mode: 'payment',
    status: 'open',
    payment_status: 'unpaid',
    amount_subtotal: amount,
    amount_total: amount,
    currency,
    client_reference_id: readClientReference(params.client_reference_id),
    customer_email: readEmail(params.customer_email),
    customer_details: null,
    metadata: readStringMap(params.metadata, 'metadata'),
    payment_intent: null,
    success_url: successUrl,
    cancel_url: readRedirectUrl(params.cancel_url, 'cancel_url') ?? null,
    url: null,
    created,
    expires_at: readExpiresAt(params.expires_at, created),
    livemode: false,
  };
  return {
    session,
    lineItems,
    paymentIntentMetadata: readStringMap(paymentIntentData.metadata, 'payment_intent_data[metadata]'),
    pendingAuthentication: null,
  };
}

function readLineItems(value: unknown): { lineItems: CheckoutLineItem[]; currency: string } {
  if (value === undefined || value === null || value === '') throw missing('line_items');
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_LINE_ITEMS) {
    throw invalidRequest(`Invalid array: line_items must list 1 to ${MAX_LINE_ITEMS} items.`, {
      code: 'parameter_invalid_array',
      param: 'line_items',
    });
  }
  const priced = value.map((raw: unknown, index) => readLineItem(raw, `line_items[${index}]`));
  const currency = priced[0]?.currency ?? '';
  priced.forEach((item, index) => {
    if (item.currency !== currency) {
      throw invalidRequest('All line items of a Checkout Session must have the same currency.', {
        code: 'parameter_invalid_string',
        param: `line_items[${index}][price_data][currency]`,
      });
    }
  });
  return { lineItems: priced.map(({ lineItem }) => lineItem), currency };
}

function readLineItem(raw: unknown, param: string): { lineItem: CheckoutLineItem; currency: string } {
  const item = readObject(raw, param);
  const price = readString(item.price, `${param}[price]`);
  if (price !== undefined) {
    throw invalidRequest(`The PSP sandbox prices line items with ${param}[price_data] only.`, {
      code: 'parameter_unknown',
      param: `${param}[price]`,
    });
  }
  const quantity = requireInteger(item.quantity, `${param}[quantity]`, { min: 1, max: MAX_QUANTITY });
  const priceData = readObject(item.price_data, `${param}[price_data]`);
  if (Object.keys(priceData).length === 0) throw missing(`${param}[price_data]`);
  const currency = requireCurrency(priceData.currency, `${param}[price_data][currency]`);
  const unitAmount = requireInteger(priceData.unit_amount, `${param}[price_data][unit_amount]`, {
    min: 0,
    max: MAX_AMOUNT,
  });
  const productParam = `${param}[price_data][product_data]`;
  const product = readObject(priceData.product_data, productParam);
  const lineItem: CheckoutLineItem = {
    name: requireString(product.name, `${productParam}[name]`),
    description: readString(product.description, `${productParam}[description]`) ?? null,
    quantity,
    unitAmount,
  };
  return { lineItem, currency };
}

function readClientReference(value: unknown): string | null {
  const reference = readString(value, 'client_reference_id');
  if (reference !== undefined && reference.length > MAX_CLIENT_REFERENCE_LENGTH) {
    throw invalidRequest(`client_reference_id must be at most ${MAX_CLIENT_REFERENCE_LENGTH} characters.`, {
      code: 'parameter_invalid_string',
      param: 'client_reference_id',
    });
  }
  return reference ?? null;
}

function readEmail(value: unknown): string | null {
  const email = readString(value, 'customer_email');
  if (email === undefined) return null;
  if (!EMAIL.test(email)) {
    throw invalidRequest(`Invalid email address: ${email}`, {
      code: 'email_invalid',
      param: 'customer_email',
    });
  }
  return email;
}

function readRedirectUrl(value: unknown, param: string): string | undefined {
  const url = readString(value, param);
  if (url === undefined) return undefined;
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed?.protocol !== 'http:' && parsed?.protocol !== 'https:') {
    throw invalidRequest('Not a valid URL', { code: 'url_invalid', param });
  }
  return url;
}

function readExpiresAt(value: unknown, created: number): number {
  const expiresAt = readInteger(value, 'expires_at', { min: 0, max: Number.MAX_SAFE_INTEGER });
  if (expiresAt === undefined) return created + MAX_LIFETIME_SECONDS;
  if (expiresAt < created + MIN_LIFETIME_SECONDS) {
    throw invalidRequest(
      'The `expires_at` timestamp must be at least 30 minutes from Checkout Session creation.',
      { code: 'parameter_invalid_integer', param: 'expires_at' },
    );
  }
  if (expiresAt > created + MAX_LIFETIME_SECONDS) {
    throw invalidRequest(
      'The `expires_at` timestamp must be less than 24 hours from Checkout Session creation.',
      {
        code: 'parameter_invalid_integer',
        param: 'expires_at',
      },
    );
  }
  return expiresAt;
}

function missing(param: string): Error {
  return invalidRequest(`Missing required param: ${param}.`, { code: 'parameter_missing', param });
}

export function isEmailAddress(value: string): boolean {
  return EMAIL.test(value);
}
