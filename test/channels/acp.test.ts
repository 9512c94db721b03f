// db-scope: both

import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { SELLABLE_ITEMS } from '../../src/catalog/index.ts';
import { getOrder } from '../../src/purchase/index.ts';
import { HOUR_MS } from '../../src/shared/clock.ts';
import { getWorkspace } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';
import {
  type AcpClient,
  completeBody,
  createBody,
  expectError,
  expectSession,
  httpClient,
  injectingClient,
} from './acp-client.ts';

async function openSession(acp: AcpClient, itemId = 'svc-pro-monthly', email = 'owner@example.com') {
  return expectSession(await acp.create(createBody(itemId, email)), 201);
}

async function checkoutFixture(t: Parameters<typeof startPurchaseFixture>[0]) {
  const fixture = await startPurchaseFixture(t);
  return { fixture, acp: injectingClient(fixture.runtime.app) };
}

describe(`ACP checkout sessions on ${testDialect}`, () => {
  it('sells each of the six items over real HTTP: one charge, one workspace, one invitation', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const { runtime, sandbox } = fixture;
    await runtime.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = runtime.app.server.address() as AddressInfo;
    const acp = httpClient(`http://127.0.0.1:${port}`);

    for (const [index, item] of SELLABLE_ITEMS.entries()) {
      const email = `owner${index}@example.com`;
      // Half give the email at creation, half add it with an update.
      let session = expectSession(await acp.create(createBody(item.id, index % 2 ? undefined : email)), 201);
      if (index % 2) {
        assert.equal(session.status, 'not_ready_for_payment');
        assert.deepEqual(
          session.messages.map((m) => [m.type, 'code' in m ? m.code : '', 'param' in m ? m.param : '']),
          [['error', 'missing', '$.buyer.email']],
        );
        session = expectSession(await acp.update(session.id, { buyer: { email, first_name: 'Ada' } }));
        assert.deepEqual(session.buyer, { email, first_name: 'Ada' });
      }
      assert.equal(session.status, 'ready_for_payment');
      assert.deepEqual(session.messages, []);
      assert.deepEqual(
        session.totals.map((total) => [total.type, total.amount]),
        [
          ['items_base_amount', item.price.amount],
          ['subtotal', item.price.amount],
          ['total', item.price.amount],
        ],
      );
      assert.equal(session.line_items[0]?.item.id, item.id);
      assert.equal(session.capabilities.payment.handlers[0]?.id, 'psp_spt');
      assert.equal(
        session.capabilities.payment.handlers[0]?.config.merchant_id,
        runtime.config.psp.networkProfileId,
      );

      const token = await fixture.mintToken({ maxAmount: item.price.amount });
      const completed = expectSession(await acp.complete(session.id, completeBody(token)));
      assert.equal(completed.status, 'completed');
      assert.equal(completed.buyer, undefined);
      assert.equal(completed.order?.checkout_session_id, session.id);
      assert.match(
        completed.order?.permalink_url ?? '',
        new RegExp(`^http://svc\\.test/orders/${completed.order?.id}\\?key=[A-Za-z0-9_-]{43}$`),
      );

      const order = await getOrder(runtime.database.db, completed.order?.id ?? '');
      assert.ok(order);
      const intent = sandbox.state.getPaymentIntent(order.paymentIntentId);
      assert.deepEqual([intent?.status, intent?.amount], ['succeeded', item.price.amount]);
      const workspace = await getWorkspace(runtime.database.db, order.workspaceId);
      assert.equal(workspace?.plan, item.price.plan);
      assert.deepEqual(expectSession(await acp.get(session.id)), completed);
    }

    await fixture.deliverMail();
    const mails = await fixture.smtp.waitFor(SELLABLE_ITEMS.length);
    assert.deepEqual(
      mails.map((mail) => mail.to && !Array.isArray(mail.to) && mail.to.value[0]?.address).sort(),
      SELLABLE_ITEMS.map((_, index) => `owner${index}@example.com`).sort(),
    );
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 6,
      succeeded: 6,
      orders: 6,
      workspaces: 6,
      emails: 6,
    });
  });

  for (const [paymentMethod, expected] of [
    ['pm_card_visa_chargeDeclined', 'payment_declined'],
    ['pm_card_visa_chargeDeclinedInsufficientFunds', 'payment_declined'],
    ['pm_card_authenticationRequired', 'requires_3ds'],
  ] as const) {
    it(`keeps the session ready after ${paymentMethod} (${expected}); another token then pays`, async (t) => {
      const { fixture, acp } = await checkoutFixture(t);
      const session = await openSession(acp);
      const refused = await fixture.mintToken({ paymentMethod });
      const declined = expectSession(await acp.complete(session.id, completeBody(refused)));
      assert.equal(declined.status, 'ready_for_payment');
      assert.equal(declined.order, undefined);
      assert.equal(declined.messages.length, 1);
      const message = declined.messages[0];
      assert.ok(message?.type === 'error');
      assert.equal(message.code, expected);
      assert.ok(message.content.length > 0);
      assert.deepEqual(expectSession(await acp.get(session.id)).messages, declined.messages);

      const good = await fixture.mintToken();
      const completed = expectSession(await acp.complete(session.id, completeBody(good)));
      assert.equal(completed.status, 'completed');
      assert.deepEqual(
        completed.messages.map((m) => m.type),
        ['info'],
      );
      const counts = await fixture.counts();
      assert.deepEqual([counts.succeeded, counts.orders], [1, 1]);
    });
  }

  it('takes the buyer on complete when the session has none yet', async (t) => {
    const { fixture, acp } = await checkoutFixture(t);
    const session = expectSession(await acp.create(createBody('svc-starter-annual')), 201);
    const token = await fixture.mintToken();
    const missing = await acp.complete(session.id, completeBody(token));
    expectError(missing, 400, 'missing', '$.buyer.email');
    const completed = expectSession(
      await acp.complete(session.id, { ...completeBody(token), buyer: { email: 'late@example.com' } }),
    );
    assert.equal(completed.status, 'completed');
    assert.equal((await fixture.counts()).succeeded, 1);
  });

  it('prices from the catalog: an update changes the plan, line item and totals follow', async (t) => {
    const { acp } = await checkoutFixture(t);
    const created = expectSession(
      await acp.create({
        ...createBody('svc-starter-monthly', 'a@example.com'),
        line_items: [{ id: 'svc-starter-monthly', quantity: 1, unit_amount: 1, name: 'cheap' }],
      }),
      201,
    );
    assert.equal(created.line_items[0]?.unit_amount, 9900);
    const updated = expectSession(await acp.update(created.id, { line_items: [{ id: 'svc-pro-annual' }] }));
    assert.equal(updated.line_items[0]?.item.id, 'svc-pro-annual');
    assert.equal(updated.line_items[0]?.unit_amount, 309900);
    assert.deepEqual(
      updated.totals.map((total) => total.amount),
      [309900, 309900, 309900],
    );
    assert.equal(updated.buyer?.email, 'a@example.com');
    const cleared = expectSession(await acp.update(created.id, { buyer: null }));
    assert.deepEqual([cleared.status, cleared.buyer], ['not_ready_for_payment', undefined]);
  });

  it('cancels an open session once; a canceled session cannot be changed or paid', async (t) => {
    const { fixture, acp } = await checkoutFixture(t);
    const session = await openSession(acp);
    const canceled = expectSession(
      await acp.cancel(session.id, {
        intent_trace: { reason_code: 'timing_deferred', trace_summary: 'later' },
      }),
    );
    assert.equal(canceled.status, 'canceled');
    expectError(await acp.cancel(session.id), 405, 'session_not_modifiable');
    expectError(await acp.update(session.id, { buyer: null }), 405, 'session_not_modifiable');
    const token = await fixture.mintToken();
    expectError(await acp.complete(session.id, completeBody(token)), 405, 'session_not_modifiable');
    assert.equal((await fixture.counts()).paymentIntents, 0);
  });

  it('cancels with no body, even when the agent still sends Content-Type: application/json', async (t) => {
    const { acp } = await checkoutFixture(t);
    const first = await openSession(acp);
    assert.equal(expectSession(await acp.cancel(first.id)).status, 'canceled');
    const second = await openSession(acp);
    const reply = await acp.raw('POST', `/api/acp/checkout_sessions/${second.id}/cancel`, {
      'content-type': 'application/json',
      'idempotency-key': 'cancel-with-empty-json-body',
    });
    assert.equal(expectSession(reply).status, 'canceled');
  });

  it('expires a session one hour after creation; it can then not be paid', async (t) => {
    const { fixture, acp } = await checkoutFixture(t);
    const session = await openSession(acp);
    assert.equal(Date.parse(session.expires_at) - Date.parse(session.created_at), HOUR_MS);
    fixture.clock.advance(HOUR_MS - 1);
    assert.equal(expectSession(await acp.get(session.id)).status, 'ready_for_payment');
    fixture.clock.advance(1);
    const expired = expectSession(await acp.get(session.id));
    assert.equal(expired.status, 'expired');
    assert.deepEqual(
      expired.messages.map((m) => m.type === 'error' && m.code),
      ['expired'],
    );
    const token = await fixture.mintToken();
    expectError(await acp.complete(session.id, completeBody(token)), 405, 'session_not_modifiable');
    assert.equal((await fixture.counts()).paymentIntents, 0);
  });

  it('answers an unknown session id with 404 on every operation', async (t) => {
    const { acp } = await checkoutFixture(t);
    const unknown = 'cs_unknownunknownunknownunknownunknownunknownx';
    expectError(await acp.get(unknown), 404, 'not_found');
    expectError(await acp.update(unknown, {}), 404, 'not_found');
    expectError(await acp.complete(unknown, completeBody('spt_x')), 404, 'not_found');
    expectError(await acp.cancel(unknown), 404, 'not_found');
  });

  it('accepts the legacy items key and a request without capabilities', async (t) => {
    const { acp } = await checkoutFixture(t);
    const session = expectSession(
      await acp.create({ items: [{ id: 'svc-enterprise-monthly', quantity: 1 }], currency: 'usd' }),
      201,
    );
    assert.equal(session.line_items[0]?.item.id, 'svc-enterprise-monthly');
  });

  it('speaks API-Version 2026-04-17, assumed when missing, and refuses others with 400', async (t) => {
    const { acp } = await checkoutFixture(t);
    const session = expectSession(
      await acp.create(createBody('svc-pro-monthly'), { headers: { 'api-version': '2026-04-17' } }),
      201,
    );
    assert.equal(session.protocol.version, '2026-04-17');
    const refused = expectError(
      await acp.get(session.id, { headers: { 'api-version': '2025-09-29' } }),
      400,
      'unsupported_api_version',
    );
    assert.deepEqual(refused.supported_versions, ['2026-04-17']);
    expectError(
      await acp.create(createBody('svc-pro-monthly'), { headers: { 'api-version': 'latest' } }),
      400,
      'unsupported_api_version',
    );
  });
});
