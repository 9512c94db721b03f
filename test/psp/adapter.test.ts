// db-scope: both

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createStripeAdapter, type PaymentProvider } from '../../src/psp/index.ts';
import { type RunningPspSandbox, startPspSandbox } from '../../src/psp/sandbox/main.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { API_VERSION, mintToken, SANDBOX_KEY } from '../helpers/purchase.ts';

let sandbox: RunningPspSandbox;
const clock = new ManualClock(new Date());
let keys = 0;

function adapter(options: { secretKey?: string; maxNetworkRetries?: number } = {}): PaymentProvider {
  return createStripeAdapter({
    secretKey: options.secretKey ?? SANDBOX_KEY,
    webhookSecret: 'whsec_sandbox',
    apiBase: new URL(sandbox.url),
    apiVersion: API_VERSION,
    maxNetworkRetries: options.maxNetworkRetries ?? 0,
  });
}

async function chargeWith(
  provider: PaymentProvider,
  token: string,
  idempotencyKey = `adapter-test-${++keys}`,
) {
  return provider.charge({
    amount: 9900,
    currency: 'usd',
    token,
    idempotencyKey,
    metadata: { order_id: 'ord_test' },
  });
}

describe('PSP adapter (official SDK against the sandbox)', () => {
  before(async () => {
    sandbox = await startPspSandbox({ secretKey: SANDBOX_KEY });
  });
  after(() => sandbox.close());

  it('reports a successful charge with its payment intent, and retrieves it', async () => {
    const provider = adapter();
    const outcome = await chargeWith(provider, await mintToken(sandbox.url, clock));
    assert.equal(outcome.status, 'succeeded');
    if (outcome.status !== 'succeeded') return;
    assert.match(outcome.paymentIntentId, /^pi_/);
    const intent = await provider.retrievePaymentIntent(outcome.paymentIntentId);
    assert.deepEqual(
      { status: intent?.status, amount: intent?.amount, order: intent?.metadata.order_id },
      { status: 'succeeded', amount: 9900, order: 'ord_test' },
    );
    assert.equal(await provider.retrievePaymentIntent('pi_missing'), undefined);
  });

  it('returns the first outcome for a repeated key without charging again', async () => {
    const provider = adapter();
    const token = await mintToken(sandbox.url, clock);
    const before = sandbox.state.listPaymentIntents().length;
    const first = await chargeWith(provider, token, 'adapter-replay');
    const second = await chargeWith(provider, token, 'adapter-replay');
    assert.deepEqual(second, first);
    assert.equal(sandbox.state.listPaymentIntents().length, before + 1);
  });

  it('turns declines, 3-D Secure and refused tokens into values, not exceptions', async () => {
    const provider = adapter();
    const generic = await chargeWith(
      provider,
      await mintToken(sandbox.url, clock, { paymentMethod: 'pm_card_visa_chargeDeclined' }),
    );
    assert.deepEqual(generic.status === 'declined' && generic.declineCode, 'generic_decline');
    const threeDs = await chargeWith(
      provider,
      await mintToken(sandbox.url, clock, { paymentMethod: 'pm_card_threeDSecure2Required' }),
    );
    assert.equal(threeDs.status, 'requires_action');
    const unknown = await chargeWith(provider, 'spt_doesnotexist000000000000');
    assert.deepEqual(unknown.status === 'declined' && unknown.declineCode, 'resource_missing');
    assert.doesNotMatch(
      unknown.status === 'declined' ? unknown.message : '',
      /spt_doesnotexist/,
      'the token is not quoted back',
    );
  });

  it('reports provider outages as retryable and bad credentials as not', async () => {
    const token = await mintToken(sandbox.url, clock);
    sandbox.faults.failNext(1, 500);
    const outage = await chargeWith(adapter(), token);
    assert.deepEqual(outage.status === 'failed' && outage.retryable, true);
    const unauthorized = await chargeWith(adapter({ secretKey: 'sk_test_wrong' }), token);
    assert.deepEqual(unauthorized.status === 'failed' && unauthorized.retryable, false);
    assert.equal((await chargeWith(adapter(), token)).status, 'succeeded', 'nothing was charged before');
  });

  it('treats a replayed answer to a lost response as this attempt succeeding', async () => {
    const token = await mintToken(sandbox.url, clock);
    sandbox.faults.dropResponses(1);
    const before = sandbox.state.listPaymentIntents().length;
    const outcome = await chargeWith(adapter({ maxNetworkRetries: 1 }), token);
    assert.equal(outcome.status, 'succeeded');
    assert.equal(sandbox.state.listPaymentIntents().length, before + 1);
  });
});
