// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Receipt } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { validate } from 'mppx/discovery';
import { PurchaseRequestBody } from '../../src/channels/mpp/schemas.ts';
import { testDialect } from '../helpers/database.ts';
import {
  challengeParams,
  decodeBase64urlJson,
  type MppFixture,
  readResult,
  startMppFixture,
} from '../helpers/mpp.ts';
import { SANDBOX_KEY } from '../helpers/purchase.ts';

interface OpenApiDocument {
  openapi: string;
  info: { version: string };
  servers: { url: string }[];
  paths: Record<
    string,
    {
      post: {
        operationId: string;
        'x-payment-info': { offers: Record<string, string>[] };
        responses: Record<string, unknown>;
      };
    }
  >;
  components: { schemas: Record<string, unknown> };
}

/** The spec's item table: operation id, item, MPP amount. */
const SPEC_ITEMS = [
  ['buyStarterMonthly', 'svc-starter-monthly', '9900'],
  ['buyStarterAnnual', 'svc-starter-annual', '99900'],
  ['buyProMonthly', 'svc-pro-monthly', '29900'],
  ['buyProAnnual', 'svc-pro-annual', '309900'],
  ['buyEnterpriseMonthly', 'svc-enterprise-monthly', '199900'],
  ['buyEnterpriseAnnual', 'svc-enterprise-annual', '1999000'],
] as const;

/**
 * The reference SDK's client paying our `psp` challenges: its stock SPT method renamed to `psp`,
 * minting each token from the PSP sandbox for exactly the challenge's amount and expiry, with the
 * given payment methods in turn (then a good card).
 */
function mppxClient(fixture: MppFixture, paymentMethods: string[] = []) {
  const minted: { amount: string; currency: string; networkId: string | undefined }[] = [];
  const psp = {
    ...stripe.charge({
      paymentMethod: 'pm_card_visa',
      createToken: async ({ amount, currency, networkId, expiresAt }) => {
        minted.push({ amount, currency, networkId });
        const form = new URLSearchParams({
          payment_method: paymentMethods.shift() ?? 'pm_card_visa',
          'usage_limits[currency]': currency,
          'usage_limits[max_amount]': amount,
          'usage_limits[expires_at]': String(expiresAt),
        });
        const response = await fetch(`${fixture.sandbox.url}/v1/test_helpers/shared_payment/granted_tokens`, {
          method: 'POST',
          headers: { authorization: `Bearer ${SANDBOX_KEY}` },
          body: form,
        });
        return ((await response.json()) as { id: string }).id;
      },
    }),
    name: 'psp' as const,
  };
  return { client: Mppx.create({ methods: [psp], polyfill: false }), minted };
}

describe(`MPP interoperability with mppx on ${testDialect}`, () => {
  it('lets the mppx client buy each of the six items end to end over a socket', async (t) => {
    const fixture = await startMppFixture(t);
    // mppx checks `expires` against the real time, so the service's clock must be near it.
    fixture.clock.set(new Date());
    const { client, minted } = mppxClient(fixture);
    for (const [, itemId, amount] of SPEC_ITEMS) {
      const email = `owner+${itemId}@example.com`;
      const response = await client.fetch(`${fixture.url}/api/mpp/plans/${itemId}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ buyer: { email, company: { name: `Co ${itemId}` } } }),
      });
      assert.equal(response.status, 200, itemId);
      const result = await readResult(response);
      assert.deepEqual([result.status, result.amount, result.renews], ['completed', amount, false]);
      const receipt = Receipt.fromResponse(response);
      assert.equal(receipt.status, 'success');
      assert.equal(receipt.method, 'psp');
      assert.match(receipt.reference, /^pi_/);
    }
    assert.deepEqual(
      minted.map((m) => m.amount),
      SPEC_ITEMS.map(([, , amount]) => amount),
    );
    assert.ok(minted.every((m) => m.currency === 'usd' && m.networkId === 'profile_test_sandbox'));

    await fixture.deliverMail();
    const mail = await fixture.smtp.waitFor(6);
    const recipients = mail.map((m) => (m.to && 'text' in m.to ? m.to.text : '')).sort();
    assert.deepEqual(recipients, SPEC_ITEMS.map(([, itemId]) => `owner+${itemId}@example.com`).sort());
    const workspaces = await fixture.runtime.database.db
      .selectFrom('workspaces')
      .select(['name', 'plan'])
      .orderBy('name')
      .execute();
    assert.equal(workspaces.length, 6);
    assert.deepEqual(workspaces.map((w) => w.plan).sort(), [
      'enterprise',
      'enterprise',
      'pro',
      'pro',
      'starter',
      'starter',
    ]);
    const counts = await fixture.counts();
    assert.deepEqual([counts.succeeded, counts.orders], [6, 6]);
  });

  it('gives the mppx client a fresh challenge after a decline, which it pays with a new token', async (t) => {
    const fixture = await startMppFixture(t);
    fixture.clock.set(new Date());
    const { client, minted } = mppxClient(fixture, ['pm_card_visa_chargeDeclined']);
    const response = await client.fetch(`${fixture.url}/api/mpp/plans/svc-pro-monthly`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ buyer: { email: 'owner@example.com' } }),
    });
    assert.equal(response.status, 200);
    assert.equal(minted.length, 2, 'one declined token, then one for the fresh challenge');
    const counts = await fixture.counts();
    assert.deepEqual([counts.paymentIntents, counts.succeeded, counts.workspaces], [2, 1, 1]);
  });
});

describe(`MPP discovery on ${testDialect}`, () => {
  it('serves /openapi.json: OpenAPI 3.1.0, version 2026-10-09, six priced operations, valid for mppx', async (t) => {
    const fixture = await startMppFixture(t);
    const response = await fetch(`${fixture.url}/openapi.json`);
    assert.equal(response.status, 200);
    assert.match(String(response.headers.get('content-type')), /^application\/json/);
    assert.equal(response.headers.get('cache-control'), 'public, max-age=300');
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    const document = (await response.json()) as OpenApiDocument;
    assert.deepEqual(validate(document), []);
    assert.equal(document.openapi, '3.1.0');
    assert.equal(document.info.version, '2026-10-09');
    assert.deepEqual(document.servers, [{ url: 'http://svc.test' }]);

    const operations = Object.entries(document.paths).map(([path, item]) => ({ path, ...item.post }));
    assert.deepEqual(
      operations.map((op) => [op.operationId, op.path]),
      SPEC_ITEMS.map(([operationId, itemId]) => [operationId, `/api/mpp/plans/${itemId}`]),
    );
    for (const [index, operation] of operations.entries()) {
      const [, , amount] = SPEC_ITEMS[index] ?? [];
      const { offers } = operation['x-payment-info'];
      assert.equal(offers.length, 1);
      assert.deepEqual(
        { ...offers[0], description: typeof offers[0]?.description },
        { intent: 'charge', method: 'psp', amount, currency: 'usd', description: 'string' },
      );
      assert.deepEqual(Object.keys(operation.responses).sort(), [
        '200',
        '400',
        '402',
        '413',
        '415',
        '429',
        '500',
        '503',
      ]);
    }
    assert.deepEqual(
      document.components.schemas.PurchaseRequest,
      JSON.parse(JSON.stringify(PurchaseRequestBody)),
    );
  });

  it('documents the problems an operation answers with, as it answers them', async (t) => {
    const fixture = await startMppFixture(t);
    const document = (await (await fetch(`${fixture.url}/openapi.json`)).json()) as OpenApiDocument;
    const [path, item] = Object.entries(document.paths)[0] ?? [];
    assert.ok(path && item);
    const refusals: [RequestInit, number, string][] = [
      [{ headers: { 'content-type': 'text/plain' }, body: 'buy' }, 415, 'unsupported_media_type'],
      [
        {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ pad: 'x'.repeat(2_000_000) }),
        },
        413,
        'body_too_large',
      ],
    ];
    for (const [init, status, code] of refusals) {
      const response = await fetch(`${fixture.url}${path}`, { method: 'POST', ...init });
      assert.equal(response.status, status);
      assert.equal(((await response.json()) as { code: string }).code, code);
      const documented = item.post.responses[String(status)];
      assert.ok(documented, `${status} is documented`);
      assert.match(JSON.stringify(documented), new RegExp(code));
    }
  });

  it('agrees with the challenges: each documented operation asks for its documented amount', async (t) => {
    const fixture = await startMppFixture(t);
    const document = (await (await fetch(`${fixture.url}/openapi.json`)).json()) as OpenApiDocument;
    for (const [path, item] of Object.entries(document.paths)) {
      const offer = item.post['x-payment-info'].offers[0];
      const response = await fetch(`${fixture.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ buyer: { email: 'agent@example.com' } }),
      });
      assert.equal(response.status, 402);
      const params = challengeParams(response.headers.get('www-authenticate') ?? '');
      assert.equal(decodeBase64urlJson(params.request ?? '').amount, offer?.amount);
    }
  });
});
