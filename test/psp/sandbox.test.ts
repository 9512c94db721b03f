// db-scope: sqlite

import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import Stripe from 'stripe';
import { type RunningPspSandbox, startPspSandbox } from '../../src/psp/sandbox/main.ts';
import type { GrantedToken, PaymentIntent } from '../../src/psp/sandbox/types.ts';

const SECRET_KEY = 'sk_test_sandbox_suite';
const PREVIEW_VERSION = '2026-07-29.preview';
const TOKENS_PATH = '/v1/test_helpers/shared_payment/granted_tokens';
const FAULTS_PATH = '/v1/test_helpers/sandbox/faults';

interface WireError {
  readonly error: {
    readonly type: string;
    readonly message: string;
    readonly code?: string;
    readonly param?: string;
    readonly decline_code?: string;
    readonly payment_intent?: PaymentIntent;
  };
}

interface WireResponse<T> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
}

interface CallOptions {
  readonly form?: Record<string, string>;
  readonly json?: unknown;
  readonly rawBody?: string;
  readonly headers?: Record<string, string>;
  readonly authorization?: string | null;
}

let sandbox: RunningPspSandbox;
let clock = new Date('2026-11-22T12:00:00Z');
let keyCounter = 0;

function nowSeconds(): number {
  return Math.floor(clock.getTime() / 1000);
}

function uniqueKey(label: string): string {
  keyCounter++;
  return `test-${label}-${keyCounter}`;
}

function stripeClient(maxNetworkRetries = 0, secretKey = SECRET_KEY): Stripe {
  return new Stripe(secretKey, {
    host: '127.0.0.1',
    port: new URL(sandbox.url).port,
    protocol: 'http',
    maxNetworkRetries,
    telemetry: false,
  });
}

async function call<T = WireError>(
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<WireResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.authorization !== null) headers.authorization = options.authorization ?? `Bearer ${SECRET_KEY}`;
  let body: string | undefined;
  if (options.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(options.form).toString();
  } else if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.rawBody !== undefined) {
    headers['content-type'] ??= 'application/x-www-form-urlencoded';
    body = options.rawBody;
  }
  const response = await fetch(`${sandbox.url}${path}`, { method, headers, body });
  return { status: response.status, headers: response.headers, body: (await response.json()) as T };
}

async function mintToken(
  paymentMethod = 'pm_card_visa',
  limits: { currency?: string; max_amount?: number; expires_at?: number } = {},
): Promise<GrantedToken> {
  return stripeClient().rawRequest(
    'POST',
    TOKENS_PATH,
    { payment_method: paymentMethod, usage_limits: { currency: 'usd', max_amount: 5000, ...limits } },
    { apiVersion: PREVIEW_VERSION },
  );
}

function chargeForm(tokenId: string, overrides: Record<string, string> = {}): Record<string, string> {
  return {
    amount: '1500',
    currency: 'usd',
    confirm: 'true',
    'payment_method_data[shared_payment_granted_token]': tokenId,
    'automatic_payment_methods[enabled]': 'true',
    'automatic_payment_methods[allow_redirects]': 'never',
    ...overrides,
  };
}

function chargeWithSdk(
  tokenId: string,
  options: { idempotencyKey?: string; amount?: number; retries?: number } = {},
): Promise<Stripe.Response<Stripe.PaymentIntent>> {
  const params = {
    amount: options.amount ?? 1500,
    currency: 'usd',
    confirm: true,
    payment_method_data: { shared_payment_granted_token: tokenId },
    automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
    metadata: { order_id: 'ord_123' },
  };
  return stripeClient(options.retries ?? 0).paymentIntents.create(params as never, {
    idempotencyKey: options.idempotencyKey ?? uniqueKey('charge'),
    apiVersion: PREVIEW_VERSION,
  });
}

function storedIntentCount(): number {
  return sandbox.state.listPaymentIntents().length;
}

function tokenState(id: string): GrantedToken {
  const token = sandbox.state.getGrantedToken(id);
  assert.ok(token, `token ${id} should exist`);
  return token;
}

function assertWireError(
  response: WireResponse<WireError>,
  status: number,
  code: string,
  param?: string,
): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code);
  if (param !== undefined) assert.equal(response.body.error.param, param);
}

before(async () => {
  sandbox = await startPspSandbox({ port: 0, secretKey: SECRET_KEY, now: () => clock });
});

after(async () => {
  await sandbox.close();
});

beforeEach(() => {
  sandbox.faults.reset();
});

describe('minting shared payment tokens', () => {
  it('mints a token with the SDK and retrieves it', async () => {
    const token = await mintToken('pm_card_visa', { max_amount: 2500 });
    assert.match(token.id, /^spt_[A-Za-z0-9]{24}$/);
    assert.equal(token.object, 'shared_payment.granted_token');
    assert.deepEqual(token.usage_limits, { currency: 'usd', max_amount: 2500, expires_at: null });
    assert.deepEqual(token.usage_details.amount_captured, { currency: 'usd', value: 0 });
    assert.equal(token.deactivated_reason, null);
    assert.equal(token.payment_method_details.card.last4, '4242');
    assert.equal(token.created, nowSeconds());

    const retrieved: GrantedToken = await stripeClient().rawRequest(
      'GET',
      `/v1/shared_payment/granted_tokens/${token.id}`,
    );
    assert.deepEqual(retrieved, token);
  });

  it('mints a token from a form body and answers with Stripe headers', async () => {
    const response = await call<GrantedToken>('POST', TOKENS_PATH, {
      form: {
        payment_method: 'pm_card_visa',
        'usage_limits[currency]': 'EUR',
        'usage_limits[max_amount]': '999',
        'usage_limits[expires_at]': String(nowSeconds() + 3600),
        'shared_metadata[cart]': 'c_1',
        'seller_details[network_id]': 'internal',
        customer: 'cus_123',
      },
      headers: { 'stripe-version': PREVIEW_VERSION, 'idempotency-key': 'mint-form-1' },
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('request-id') ?? '', /^req_[A-Za-z0-9]{24}$/);
    assert.equal(response.headers.get('stripe-version'), PREVIEW_VERSION);
    assert.equal(response.headers.get('idempotency-key'), 'mint-form-1');
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(response.body.usage_limits, {
      currency: 'eur',
      max_amount: 999,
      expires_at: nowSeconds() + 3600,
    });
    assert.deepEqual(response.body.shared_metadata, { cart: 'c_1' });
  });

  it('rejects unknown payment methods and invalid limits', async () => {
    const unknown = await call('POST', TOKENS_PATH, {
      form: {
        payment_method: 'pm_card_nope',
        'usage_limits[currency]': 'usd',
        'usage_limits[max_amount]': '100',
      },
    });
    assertWireError(unknown, 400, 'resource_missing', 'payment_method');

    const missing = await call('POST', TOKENS_PATH, {
      form: { payment_method: 'pm_card_visa', 'usage_limits[currency]': 'usd' },
    });
    assertWireError(missing, 400, 'parameter_missing', 'usage_limits[max_amount]');

    const zero = await call('POST', TOKENS_PATH, {
      form: {
        payment_method: 'pm_card_visa',
        'usage_limits[currency]': 'usd',
        'usage_limits[max_amount]': '0',
      },
    });
    assertWireError(zero, 400, 'parameter_invalid_integer', 'usage_limits[max_amount]');
  });

  it('revokes a token', async () => {
    const token = await mintToken();
    const revoked = await call<GrantedToken>('POST', `${TOKENS_PATH}/${token.id}/revoke`);
    assert.equal(revoked.status, 200);
    assert.equal(revoked.body.deactivated_reason, 'revoked');
    assert.equal(revoked.body.deactivated_at, nowSeconds());
  });
});

describe('charging a token', () => {
  it('succeeds with the SDK, consumes the token and stores the PaymentIntent', async () => {
    const token = await mintToken();
    const intent = await chargeWithSdk(token.id, { idempotencyKey: uniqueKey('success') });
    assert.equal(intent.status, 'succeeded');
    assert.equal(intent.amount_received, 1500);
    assert.match(String(intent.latest_charge), /^ch_[A-Za-z0-9]{24}$/);
    assert.match(String(intent.payment_method), /^pm_[A-Za-z0-9]{24}$/);
    assert.match(intent.id, /^pi_[A-Za-z0-9]{24}$/);
    assert.deepEqual(intent.metadata, { order_id: 'ord_123' });
    assert.equal(intent.lastResponse.headers['idempotent-replayed'], undefined);

    const consumed = tokenState(token.id);
    assert.equal(consumed.deactivated_reason, 'consumed');
    assert.equal(consumed.usage_details.amount_captured.value, 1500);
    assert.equal(sandbox.state.getPaymentIntent(intent.id)?.status, 'succeeded');
  });

  it('charges every card brand the ACP payment handler accepts', async () => {
    const brands: [string, string][] = [
      ['pm_card_visa', 'visa'],
      ['pm_card_mastercard', 'mastercard'],
      ['pm_card_amex', 'amex'],
      ['pm_card_discover', 'discover'],
    ];
    for (const [paymentMethod, brand] of brands) {
      const token = await mintToken(paymentMethod);
      assert.equal(token.payment_method_details.card.brand, brand, paymentMethod);
      const intent = await chargeWithSdk(token.id, { idempotencyKey: uniqueKey(paymentMethod) });
      assert.equal(intent.status, 'succeeded', paymentMethod);
    }
  });

  it('accepts the top-level token spelling and reports that spelling in errors', async () => {
    const token = await mintToken();
    const form = chargeForm(token.id, { shared_payment_granted_token: token.id });
    delete form['payment_method_data[shared_payment_granted_token]'];
    const charged = await call<PaymentIntent>('POST', '/v1/payment_intents', { form });
    assert.equal(charged.status, 200);
    assert.equal(charged.body.status, 'succeeded');

    const unknown = await call('POST', '/v1/payment_intents', {
      form: { amount: '100', currency: 'usd', confirm: 'true', shared_payment_granted_token: 'spt_unknown' },
    });
    assertWireError(unknown, 400, 'resource_missing', 'shared_payment_granted_token');
  });

  it('rejects reuse after a successful charge without charging again', async () => {
    const token = await mintToken();
    await chargeWithSdk(token.id);
    const countAfterFirst = storedIntentCount();
    await assert.rejects(chargeWithSdk(token.id), (error: unknown) => {
      assert.ok(error instanceof Stripe.errors.StripeInvalidRequestError);
      assert.equal(error.statusCode, 400);
      assert.equal(error.code, 'shared_payment_token_deactivated');
      assert.equal(error.param, 'payment_method_data[shared_payment_granted_token]');
      assert.match(error.message, /consumed/);
      return true;
    });
    assert.equal(storedIntentCount(), countAfterFirst);
    assert.equal(tokenState(token.id).usage_details.amount_captured.value, 1500);
  });

  it('rejects amounts above max_amount and a different currency', async () => {
    const token = await mintToken('pm_card_visa', { max_amount: 1000 });
    const tooMuch = await call('POST', '/v1/payment_intents', {
      form: chargeForm(token.id, { amount: '1001' }),
    });
    assertWireError(tooMuch, 400, 'amount_too_large', 'payment_method_data[shared_payment_granted_token]');

    const wrongCurrency = await call('POST', '/v1/payment_intents', {
      form: chargeForm(token.id, { amount: '1000', currency: 'eur' }),
    });
    assertWireError(wrongCurrency, 400, 'payment_method_currency_mismatch');
    assert.equal(tokenState(token.id).deactivated_reason, null);
  });

  it('rejects an expired token using the injected clock', async () => {
    const token = await mintToken('pm_card_visa', { expires_at: nowSeconds() + 60 });
    clock = new Date(clock.getTime() + 61_000);
    const expired = await call('POST', '/v1/payment_intents', { form: chargeForm(token.id) });
    assertWireError(expired, 400, 'shared_payment_token_expired');
    const retrieved = await call<GrantedToken>('GET', `/v1/shared_payment/granted_tokens/${token.id}`);
    assert.equal(retrieved.body.deactivated_reason, 'expired');
  });

  it('rejects a revoked token', async () => {
    const token = await mintToken();
    await stripeClient().rawRequest(
      'POST',
      `${TOKENS_PATH}/${token.id}/revoke`,
      {},
      { apiVersion: PREVIEW_VERSION },
    );
    const revoked = await call('POST', '/v1/payment_intents', { form: chargeForm(token.id) });
    assertWireError(revoked, 400, 'shared_payment_token_deactivated');
    assert.match(revoked.body.error.message, /revoked/);
  });

  for (const [paymentMethod, declineCode] of [
    ['pm_card_visa_chargeDeclined', 'generic_decline'],
    ['pm_card_visa_chargeDeclinedInsufficientFunds', 'insufficient_funds'],
    ['pm_card_chargeDeclinedInsufficientFunds', 'insufficient_funds'],
  ] as const) {
    it(`declines ${paymentMethod} with ${declineCode} and leaves the token usable`, async () => {
      const token = await mintToken(paymentMethod);
      for (let attempt = 0; attempt < 2; attempt++) {
        await assert.rejects(chargeWithSdk(token.id), (error: unknown) => {
          assert.ok(error instanceof Stripe.errors.StripeCardError);
          assert.equal(error.statusCode, 402);
          assert.equal(error.code, 'card_declined');
          assert.equal(error.decline_code, declineCode);
          assert.equal(error.payment_intent?.status, 'requires_payment_method');
          assert.equal(error.payment_intent?.last_payment_error?.decline_code, declineCode);
          return true;
        });
      }
      assert.equal(tokenState(token.id).deactivated_reason, null);
    });
  }

  it('answers requires_action for 3-D Secure cards, or 402 with error_on_requires_action', async () => {
    const token = await mintToken('pm_card_threeDSecure2Required');
    const pending = await chargeWithSdk(token.id);
    assert.equal(pending.status, 'requires_action');
    assert.equal(pending.next_action?.type, 'use_stripe_sdk');

    const strictToken = await mintToken('pm_card_authenticationRequired');
    const strict = await call('POST', '/v1/payment_intents', {
      form: chargeForm(strictToken.id, { error_on_requires_action: 'true' }),
    });
    assertWireError(strict, 402, 'authentication_required');
    assert.equal(strict.body.error.type, 'card_error');
    assert.equal(strict.body.error.payment_intent?.status, 'requires_payment_method');
  });

  it('lists PaymentIntents newest first and retrieves them', async () => {
    const first = await chargeWithSdk((await mintToken()).id);
    const second = await chargeWithSdk((await mintToken()).id);
    const list = await call<{ object: string; data: PaymentIntent[]; has_more: boolean }>(
      'GET',
      '/v1/payment_intents?limit=2',
    );
    assert.equal(list.body.object, 'list');
    assert.deepEqual(
      list.body.data.map((intent) => intent.id),
      [second.id, first.id],
    );
    assert.equal(list.body.has_more, storedIntentCount() > 2);
    const retrieved = await stripeClient().paymentIntents.retrieve(first.id);
    assert.equal(retrieved.status, 'succeeded');
  });
});

describe('idempotency', () => {
  it('replays the stored response for an identical request', async () => {
    const token = await mintToken();
    const key = uniqueKey('replay');
    const countBefore = storedIntentCount();
    const first = await chargeWithSdk(token.id, { idempotencyKey: key });
    const replay = await chargeWithSdk(token.id, { idempotencyKey: key });
    assert.equal(replay.id, first.id);
    assert.equal(replay.lastResponse.headers['idempotent-replayed'], 'true');
    assert.equal(replay.lastResponse.idempotencyKey, key);
    assert.equal(storedIntentCount(), countBefore + 1);
  });

  it('refuses the same key with different parameters or on another endpoint', async () => {
    const token = await mintToken();
    const key = uniqueKey('mismatch');
    await chargeWithSdk(token.id, { idempotencyKey: key, amount: 1000 });
    await assert.rejects(chargeWithSdk(token.id, { idempotencyKey: key, amount: 1001 }), (error: unknown) => {
      assert.ok(error instanceof Stripe.errors.StripeIdempotencyError);
      assert.equal(error.statusCode, 400);
      assert.match(error.message, /same parameters/);
      return true;
    });
    const otherEndpoint = await call('POST', TOKENS_PATH, {
      form: {
        payment_method: 'pm_card_visa',
        'usage_limits[currency]': 'usd',
        'usage_limits[max_amount]': '100',
      },
      headers: { 'idempotency-key': key },
    });
    assert.equal(otherEndpoint.status, 400);
    assert.equal(otherEndpoint.body.error.type, 'idempotency_error');
    assert.match(otherEndpoint.body.error.message, /same endpoint/);
  });

  it('answers 409 to a concurrent request with the same key', async () => {
    const token = await mintToken();
    const key = uniqueKey('concurrent');
    const countBefore = storedIntentCount();
    sandbox.faults.latency(300);
    const request = () =>
      call<PaymentIntent | WireError>('POST', '/v1/payment_intents', {
        form: chargeForm(token.id),
        headers: { 'idempotency-key': key },
      });
    const responses = await Promise.all([request(), request()]);
    assert.deepEqual(responses.map((response) => response.status).sort(), [200, 409]);
    const conflict = responses.find((response) => response.status === 409)?.body as WireError;
    assert.equal(conflict.error.type, 'invalid_request_error');
    assert.equal(conflict.error.code, 'idempotency_key_in_use');
    assert.equal(storedIntentCount(), countBefore + 1);

    sandbox.faults.reset();
    const replay = await call<PaymentIntent>('POST', '/v1/payment_intents', {
      form: chargeForm(token.id),
      headers: { 'idempotency-key': key },
    });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  });

  it('does not store validation failures and refuses over-long keys', async () => {
    const token = await mintToken();
    const key = uniqueKey('validation');
    const invalid = await call('POST', '/v1/payment_intents', {
      form: chargeForm(token.id, { amount: 'ten' }),
      headers: { 'idempotency-key': key },
    });
    assertWireError(invalid, 400, 'parameter_invalid_integer', 'amount');
    const fixed = await call<PaymentIntent>('POST', '/v1/payment_intents', {
      form: chargeForm(token.id),
      headers: { 'idempotency-key': key },
    });
    assert.equal(fixed.status, 200);
    assert.equal(fixed.headers.get('idempotent-replayed'), null);

    const tooLong = await call('POST', '/v1/payment_intents', {
      form: chargeForm(token.id),
      headers: { 'idempotency-key': 'k'.repeat(256) },
    });
    assert.equal(tooLong.status, 400);
    assert.equal(tooLong.body.error.type, 'idempotency_error');
  });
});

describe('fault injection', () => {
  it('drops a response after charging; an SDK retry with the same key gets the replayed PaymentIntent', async () => {
    const token = await mintToken();
    const countBefore = storedIntentCount();
    sandbox.faults.dropResponses(1);
    const intent = await chargeWithSdk(token.id, { idempotencyKey: uniqueKey('dropped'), retries: 1 });
    assert.equal(intent.status, 'succeeded');
    assert.equal(intent.lastResponse.headers['idempotent-replayed'], 'true');
    assert.equal(storedIntentCount(), countBefore + 1);
    assert.equal(sandbox.faults.settings().drop_responses, 0);
  });

  it('fails the next request without executing it; an SDK retry then succeeds', async () => {
    const token = await mintToken();
    const countBefore = storedIntentCount();
    sandbox.faults.failNext(1);
    await assert.rejects(chargeWithSdk(token.id), Stripe.errors.StripeAPIError);
    assert.equal(storedIntentCount(), countBefore);

    sandbox.faults.failNext(1);
    const intent = await chargeWithSdk(token.id, { retries: 1 });
    assert.equal(intent.status, 'succeeded');
    assert.equal(intent.lastResponse.headers['idempotent-replayed'], undefined);
    assert.equal(storedIntentCount(), countBefore + 1);
  });

  it('is configurable over HTTP with form or JSON params and reset with DELETE', async () => {
    const configured = await call<{ fail_next: number; fail_status: number; latency_ms: number }>(
      'POST',
      FAULTS_PATH,
      {
        form: { fail_next: '1', fail_status: '503' },
      },
    );
    assert.equal(configured.status, 200);
    assert.equal(configured.body.fail_next, 1);
    assert.equal(configured.body.fail_status, 503);

    const failed = await call('GET', '/v1/payment_intents');
    assert.equal(failed.status, 503);
    assert.equal(failed.body.error.type, 'api_error');
    assert.equal((await call('GET', '/v1/payment_intents')).status, 200);

    const withLatency = await call<{ latency_ms: number }>('POST', FAULTS_PATH, {
      json: { latency_ms: 50, drop_responses: 2 },
    });
    assert.equal(withLatency.body.latency_ms, 50);
    assert.equal(sandbox.faults.settings().drop_responses, 2);
    const reset = await call<{ latency_ms: number; drop_responses: number }>('DELETE', FAULTS_PATH);
    assert.equal(reset.body.latency_ms, 0);
    assert.equal(reset.body.drop_responses, 0);

    const invalid = await call('POST', FAULTS_PATH, { form: { fail_status: '200' } });
    assertWireError(invalid, 400, 'parameter_invalid_integer', 'fail_status');
  });

  it('with fail_path, fails only the requests to that path', async () => {
    const configured = await call<{ fail_next: number; fail_path: string }>('POST', FAULTS_PATH, {
      form: { fail_next: '1', fail_path: '/v1/payment_intents/pi_elsewhere' },
    });
    assert.equal(configured.body.fail_path, '/v1/payment_intents/pi_elsewhere');
    assert.equal((await call('GET', '/v1/payment_intents')).status, 200);
    assert.equal((await call('GET', '/v1/payment_intents/pi_elsewhere')).status, 500);
    assert.equal((await call('GET', '/v1/payment_intents/pi_elsewhere')).status, 404);
    assert.equal(sandbox.faults.settings().fail_next, 0);
    await call('DELETE', FAULTS_PATH);
  });
});

describe('protocol edges', () => {
  it('requires the secret key (Bearer or Basic)', async () => {
    await assert.rejects(
      stripeClient(0, 'sk_test_wrong').paymentIntents.list(),
      Stripe.errors.StripeAuthenticationError,
    );
    const missing = await call('GET', '/v1/payment_intents', { authorization: null });
    assert.equal(missing.status, 401);
    assert.equal(missing.body.error.type, 'invalid_request_error');
    assert.match(missing.headers.get('request-id') ?? '', /^req_/);
    const basic = await call('GET', '/v1/payment_intents', {
      authorization: `Basic ${Buffer.from(`${SECRET_KEY}:`).toString('base64')}`,
    });
    assert.equal(basic.status, 200);
  });

  it('answers 404 resource_missing for unknown objects and routes', async () => {
    await assert.rejects(stripeClient().paymentIntents.retrieve('pi_unknown'), (error: unknown) => {
      assert.ok(error instanceof Stripe.errors.StripeInvalidRequestError);
      assert.equal(error.statusCode, 404);
      assert.equal(error.code, 'resource_missing');
      return true;
    });
    const token = await call('GET', '/v1/shared_payment/granted_tokens/spt_unknown');
    assertWireError(token, 404, 'resource_missing');
    const route = await call('POST', '/v1/customers', { form: { name: 'x' } });
    assert.equal(route.status, 404);
    assert.equal(route.body.error.type, 'invalid_request_error');
  });

  it('answers hostile input with 400s and keeps serving', async () => {
    const token = await mintToken();
    const cases: Array<[CallOptions, number, string | undefined]> = [
      [{ rawBody: `amount=${'9'.repeat(40)}&currency=usd` }, 400, 'parameter_invalid_integer'],
      [{ rawBody: 'amount[]=1&amount[]=2&currency=usd' }, 400, 'parameter_invalid_integer'],
      [{ rawBody: 'amount=100&currency[x]=usd' }, 400, 'parameter_invalid_string'],
      [{ rawBody: 'amount=100&currency=usd&metadata=flat' }, 400, 'parameter_invalid_object'],
      [{ rawBody: `amount=100&currency=usd&a${'[x]'.repeat(20)}=1` }, 400, 'parameter_invalid_body'],
      [{ rawBody: '%E0%A4%A=%&&==&amount=1' }, 400, 'parameter_missing'],
      [{ json: [1, 2, 3] }, 400, 'parameter_invalid_body'],
      [{ rawBody: '{not json', headers: { 'content-type': 'application/json' } }, 400, undefined],
      [{ rawBody: `amount=1&pad=${'x'.repeat(70_000)}` }, 413, undefined],
    ];
    for (const [options, status, code] of cases) {
      const response = await call('POST', '/v1/payment_intents', options);
      assert.equal(response.status, status, JSON.stringify(response.body));
      assert.equal(response.body.error.type, 'invalid_request_error');
      assert.equal(response.body.error.code, code);
    }
    const stillServing = await call<PaymentIntent>('POST', '/v1/payment_intents', {
      form: chargeForm(token.id),
    });
    assert.equal(stillServing.body.status, 'succeeded');
  });
});
