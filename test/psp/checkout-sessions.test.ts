// db-scope: sqlite

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Stripe from 'stripe';
import { type RunningPspSandbox, startPspSandbox } from '../../src/psp/sandbox/main.ts';

const SECRET_KEY = 'sk_test_checkout_suite';
const SUCCESS_URL = 'https://svc.test/billing/return?session_id={CHECKOUT_SESSION_ID}';
const CANCEL_URL = 'https://svc.test/billing?cancelled=1';

let sandbox: RunningPspSandbox;
let stripe: Stripe;
const clock = new Date('2026-11-22T12:00:00Z');
const nowSeconds = () => Math.floor(clock.getTime() / 1000);

before(async () => {
  sandbox = await startPspSandbox({ secretKey: SECRET_KEY, now: () => clock });
  stripe = new Stripe(SECRET_KEY, {
    host: '127.0.0.1',
    port: new URL(sandbox.url).port,
    protocol: 'http',
    maxNetworkRetries: 0,
    telemetry: false,
  });
});

after(async () => {
  await sandbox.close();
});

function sessionParams(
  overrides: Partial<Stripe.Checkout.SessionCreateParams> = {},
): Stripe.Checkout.SessionCreateParams {
  return {
    mode: 'payment',
    line_items: [
      {
        quantity: 1,
        price_data: {
          currency: 'usd',
          unit_amount: 29_900,
          product_data: { name: 'Pro plan, annual', description: 'One year of the Pro plan <for "Acme">' },
        },
      },
    ],
    success_url: SUCCESS_URL,
    cancel_url: CANCEL_URL,
    client_reference_id: 'ws_123',
    customer_email: 'owner@example.com',
    metadata: { workspace_id: 'ws_123', item: 'pro_annual' },
    payment_intent_data: { metadata: { workspace_id: 'ws_123' } },
    ...overrides,
  };
}

async function rawError(promise: Promise<unknown>): Promise<Stripe.errors.StripeError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof Stripe.errors.StripeError, String(error));
    return error;
  }
  assert.fail('the request should have failed');
}

interface PageAnswer {
  readonly status: number;
  readonly location: string | null;
  readonly html: string;
}

async function page(url: string, form?: Record<string, string>): Promise<PageAnswer> {
  const response = await fetch(url, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    ...(form ? { body: new URLSearchParams(form) } : {}),
  });
  return { status: response.status, location: response.headers.get('location'), html: await response.text() };
}

function alertOf(html: string): string | undefined {
  return /<div role="alert">([^<]*)<\/div>/.exec(html)?.[1];
}

describe('Checkout Sessions over the API', () => {
  it('creates an open session with the hosted page url, and retrieves it', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    assert.match(session.id, /^cs_test_[A-Za-z0-9]{24}$/);
    assert.equal(session.object, 'checkout.session');
    assert.equal(session.mode, 'payment');
    assert.equal(session.status, 'open');
    assert.equal(session.payment_status, 'unpaid');
    assert.equal(session.amount_total, 29_900);
    assert.equal(session.amount_subtotal, 29_900);
    assert.equal(session.currency, 'usd');
    assert.equal(session.client_reference_id, 'ws_123');
    assert.equal(session.customer_email, 'owner@example.com');
    assert.equal(session.customer_details, null);
    assert.deepEqual(session.metadata, { workspace_id: 'ws_123', item: 'pro_annual' });
    assert.equal(session.payment_intent, null);
    assert.equal(session.success_url, SUCCESS_URL);
    assert.equal(session.cancel_url, CANCEL_URL);
    assert.equal(session.url, `${sandbox.url}/pay/${session.id}`);
    assert.equal(session.created, nowSeconds());
    assert.equal(session.expires_at, nowSeconds() + 24 * 3600);
    assert.equal(session.livemode, false);

    const retrieved = await stripe.checkout.sessions.retrieve(session.id);
    assert.deepEqual({ ...retrieved, lastResponse: undefined }, { ...session, lastResponse: undefined });
  });

  it('sums several line items and takes an expires_at between 30 minutes and 24 hours ahead', async () => {
    const session = await stripe.checkout.sessions.create(
      sessionParams({
        line_items: [
          { quantity: 2, price_data: { currency: 'eur', unit_amount: 500, product_data: { name: 'Seat' } } },
          { quantity: 1, price_data: { currency: 'eur', unit_amount: 250, product_data: { name: 'Setup' } } },
        ],
        expires_at: nowSeconds() + 1800,
      }),
    );
    assert.equal(session.amount_total, 1250);
    assert.equal(session.currency, 'eur');
    assert.equal(session.expires_at, nowSeconds() + 1800);
  });

  it('answers unknown sessions with 404 resource_missing', async () => {
    const error = await rawError(stripe.checkout.sessions.retrieve('cs_test_nothing'));
    assert.equal(error.statusCode, 404);
    assert.equal(error.type, 'StripeInvalidRequestError');
    assert.equal(error.code, 'resource_missing');
    assert.equal(error.message, "No such checkout.session: 'cs_test_nothing'");
  });

  const badParams: [
    string,
    Partial<Stripe.Checkout.SessionCreateParams> | Record<string, unknown>,
    string,
  ][] = [
    ['no mode', { mode: undefined }, 'mode'],
    ['a subscription', { mode: 'subscription' }, 'mode'],
    ['no line items', { line_items: undefined }, 'line_items'],
    [
      'a zero quantity',
      {
        line_items: [
          { quantity: 0, price_data: { currency: 'usd', unit_amount: 100, product_data: { name: 'x' } } },
        ],
      },
      'line_items[0][quantity]',
    ],
    ['a price id', { line_items: [{ quantity: 1, price: 'price_123' }] }, 'line_items[0][price]'],
    [
      'no unit amount',
      { line_items: [{ quantity: 1, price_data: { currency: 'usd', product_data: { name: 'x' } } }] },
      'line_items[0][price_data][unit_amount]',
    ],
    [
      'no product name',
      { line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: 100, product_data: {} } }] },
      'line_items[0][price_data][product_data][name]',
    ],
    [
      'mixed currencies',
      {
        line_items: [
          { quantity: 1, price_data: { currency: 'usd', unit_amount: 100, product_data: { name: 'a' } } },
          { quantity: 1, price_data: { currency: 'eur', unit_amount: 100, product_data: { name: 'b' } } },
        ],
      },
      'line_items[1][price_data][currency]',
    ],
    ['no success url', { success_url: undefined }, 'success_url'],
    ['a success url that is no URL', { success_url: 'not a url' }, 'success_url'],
    ['a javascript: cancel url', { cancel_url: 'javascript:alert(1)' }, 'cancel_url'],
    ['a bad email', { customer_email: 'nobody' }, 'customer_email'],
    ['an expiry under 30 minutes', { expires_at: nowSeconds() + 600 }, 'expires_at'],
    ['an expiry over 24 hours', { expires_at: nowSeconds() + 25 * 3600 }, 'expires_at'],
  ];
  for (const [what, overrides, param] of badParams) {
    it(`refuses ${what} with 400 naming ${param}`, async () => {
      const error = await rawError(stripe.checkout.sessions.create(sessionParams(overrides as never)));
      assert.equal(error.statusCode, 400);
      assert.equal(error.type, 'StripeInvalidRequestError');
      assert.equal(error.param, param, error.message);
    });
  }

  it('expires an open session once; expiring it again is refused', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    const expired = await stripe.checkout.sessions.expire(session.id);
    assert.equal(expired.status, 'expired');
    assert.equal(expired.payment_status, 'unpaid');
    assert.equal(expired.url, null);
    const again = await rawError(stripe.checkout.sessions.expire(session.id));
    assert.equal(again.statusCode, 400);
    assert.match(again.message, /Only Checkout Sessions with a status of `open` can be expired/);
    assert.equal((await stripe.checkout.sessions.retrieve(session.id)).status, 'expired');
  });

  it('refuses to expire a completed session', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    const paid = await page(`${session.url}`, {
      email: 'owner@example.com',
      card_number: '4242424242424242',
    });
    assert.equal(paid.status, 303);
    const error = await rawError(stripe.checkout.sessions.expire(session.id));
    assert.equal(error.statusCode, 400);
    assert.equal((await stripe.checkout.sessions.retrieve(session.id)).status, 'complete');
  });

  it('replays a create with the same Idempotency-Key instead of opening a second session', async () => {
    const first = await stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'checkout-once' });
    const replay = await stripe.checkout.sessions.create(sessionParams(), {
      idempotencyKey: 'checkout-once',
    });
    assert.equal(replay.id, first.id);
    assert.equal(replay.lastResponse.headers['idempotent-replayed'], 'true');
    const changed = await rawError(
      stripe.checkout.sessions.create(sessionParams({ client_reference_id: 'ws_other' }), {
        idempotencyKey: 'checkout-once',
      }),
    );
    assert.equal(changed.type, 'StripeIdempotencyError');
  });

  it('requires the secret key for the API but not for the hosted page', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    const unauthenticated = await fetch(`${sandbox.url}/v1/checkout/sessions/${session.id}`);
    assert.equal(unauthenticated.status, 401);
    assert.equal((await page(`${session.url}`)).status, 200);
  });

  it('never makes the hosted page fail when faults are injected into the API', async (t) => {
    t.after(() => sandbox.faults.reset());
    const session = await stripe.checkout.sessions.create(sessionParams());
    sandbox.faults.failNext(5, 503);
    assert.equal((await page(`${session.url}`)).status, 200);
    const error = await rawError(stripe.checkout.sessions.retrieve(session.id));
    assert.equal(error.statusCode, 503);
  });
});

describe('the hosted checkout page', () => {
  it('shows the item, the amount, the prefilled email, the test cards and the cancel link, escaped', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    const shown = await page(`${session.url}`);
    assert.equal(shown.status, 200);
    assert.match(shown.html, /^<!doctype html>\n<html lang="en">/);
    assert.equal(shown.html.match(/<h1>/g)?.length, 1);
    assert.match(shown.html, /Pro plan, annual/);
    assert.match(shown.html, /One year of the Pro plan &lt;for &quot;Acme&quot;&gt;/);
    assert.doesNotMatch(shown.html, /<for "Acme">/);
    assert.match(shown.html, /\$299\.00/);
    assert.match(shown.html, /name="email"[^>]*value="owner@example\.com"/);
    assert.match(shown.html, /<label for="card_number">Card number<\/label>/);
    for (const card of [
      '4242 4242 4242 4242',
      '4000 0000 0000 0002',
      '4000 0000 0000 9995',
      '4000 0027 6000 3184',
    ]) {
      assert.match(shown.html, new RegExp(card));
    }
    assert.match(shown.html, /<button type="submit">Pay<\/button>/);
    assert.match(
      shown.html,
      new RegExp(`<a href="${CANCEL_URL.replace(/[?.]/g, '\\$&')}">Cancel and return</a>`),
    );
    assert.equal(alertOf(shown.html), undefined);
  });

  it('pays with the success card: 303 to success_url with the id, a succeeded PaymentIntent', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    const paid = await page(`${session.url}`, {
      email: 'payer@example.com',
      card_number: '4242 4242 4242 4242',
    });
    assert.equal(paid.status, 303);
    assert.equal(paid.location, `https://svc.test/billing/return?session_id=${session.id}`);

    const completed = await stripe.checkout.sessions.retrieve(session.id);
    assert.equal(completed.status, 'complete');
    assert.equal(completed.payment_status, 'paid');
    assert.equal(completed.url, null);
    assert.deepEqual(completed.customer_details, { email: 'payer@example.com' });
    assert.ok(typeof completed.payment_intent === 'string');
    const intent = await stripe.paymentIntents.retrieve(completed.payment_intent);
    assert.equal(intent.status, 'succeeded');
    assert.equal(intent.amount, 29_900);
    assert.equal(intent.amount_received, 29_900);
    assert.deepEqual(intent.metadata, { workspace_id: 'ws_123' });

    const again = await page(`${session.url}`);
    assert.equal(again.status, 200);
    assert.match(again.html, /Payment complete/);
    assert.match(again.html, new RegExp(`href="https://svc.test/billing/return\\?session_id=${session.id}"`));
    const paidTwice = await page(`${session.url}`, {
      email: 'payer@example.com',
      card_number: '4242424242424242',
    });
    assert.equal(paidTwice.status, 200);
    assert.equal(
      sandbox.state.listPaymentIntents().filter((each) => each.id === completed.payment_intent).length,
      1,
    );
    assert.equal(
      (await stripe.checkout.sessions.retrieve(session.id)).payment_intent,
      completed.payment_intent,
    );
  });

  for (const [card, message] of [
    ['4000 0000 0000 0002', 'Your card was declined.'],
    ['4000000000009995', 'Your card has insufficient funds.'],
    ['4111 1111 1111 1111', 'Your card number is invalid.'],
  ] as const) {
    it(`answers ${card} with the page again and "${message}"; the session stays open`, async () => {
      const session = await stripe.checkout.sessions.create(sessionParams());
      const answer = await page(`${session.url}`, { email: 'payer@example.com', card_number: card });
      assert.ok(answer.status === 200 || answer.status === 422, String(answer.status));
      assert.equal(alertOf(answer.html), message);
      assert.match(answer.html, /<button type="submit">Pay<\/button>/);
      const open = await stripe.checkout.sessions.retrieve(session.id);
      assert.equal(open.status, 'open');
      assert.equal(open.payment_intent, null);
    });
  }

  it('asks for 3-D Secure with the authentication card; completing it pays', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    const challenged = await page(`${session.url}`, {
      email: 'payer@example.com',
      card_number: '4000 0027 6000 3184',
    });
    assert.equal(challenged.status, 303);
    assert.equal(challenged.location, `/pay/${session.id}/authenticate`);
    const authenticate = await page(`${sandbox.url}${challenged.location}`);
    assert.equal(authenticate.status, 200);
    assert.match(authenticate.html, /Complete authentication/);
    assert.match(authenticate.html, /Fail authentication/);
    assert.equal((await stripe.checkout.sessions.retrieve(session.id)).status, 'open');

    const done = await page(`${sandbox.url}${challenged.location}`, { outcome: 'complete' });
    assert.equal(done.status, 303);
    assert.equal(done.location, `https://svc.test/billing/return?session_id=${session.id}`);
    const completed = await stripe.checkout.sessions.retrieve(session.id);
    assert.equal(completed.payment_status, 'paid');
    assert.deepEqual(completed.customer_details, { email: 'payer@example.com' });
  });

  it('returns to the pay page with an alert when authentication fails; the session stays open', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    const challenged = await page(`${session.url}`, {
      email: 'payer@example.com',
      card_number: '4000002760003184',
    });
    const failed = await page(`${sandbox.url}${challenged.location}`, { outcome: 'fail' });
    assert.equal(failed.status, 200);
    assert.match(alertOf(failed.html) ?? '', /unable to authenticate your payment method/);
    assert.equal((await stripe.checkout.sessions.retrieve(session.id)).status, 'open');
    const stale = await page(`${sandbox.url}${challenged.location}`);
    assert.equal(stale.status, 303);
    assert.equal(stale.location, `/pay/${session.id}`);
  });

  it('says an expired session can no longer be paid, with the way back', async () => {
    const session = await stripe.checkout.sessions.create(sessionParams());
    await stripe.checkout.sessions.expire(session.id);
    const shown = await page(`${session.url}`);
    assert.equal(shown.status, 200);
    assert.match(shown.html, /This checkout has expired/);
    assert.match(shown.html, /Return to the merchant/);
    const tried = await page(`${session.url}`, {
      email: 'payer@example.com',
      card_number: '4242424242424242',
    });
    assert.equal(tried.status, 200);
    assert.equal((await stripe.checkout.sessions.retrieve(session.id)).status, 'expired');
  });

  it('answers an unknown session with a 404 page', async () => {
    const missing = await page(`${sandbox.url}/pay/cs_test_unknown`);
    assert.equal(missing.status, 404);
    assert.match(missing.html, /Checkout not found/);
  });
});
