// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';
import { completeBody, createBody, expectError, expectSession, injectingClient } from './acp-client.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };

describe(`ACP bad input on ${testDialect}: a clear 4xx in ACP's Error format, never a 500`, () => {
  it('refuses create bodies that do not describe one sellable plan term in usd', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const cases: [string, unknown, number, string, string?][] = [
      ['unknown item', createBody('svc-gold-monthly'), 400, 'invalid_item_id', '$.line_items[0].id'],
      ['item not sold to agents', createBody('svc-msp-monthly'), 400, 'not_sellable', '$.line_items[0].id'],
      ['add-on', createBody('svc-addon-additional-framework'), 400, 'not_sellable', '$.line_items[0].id'],
      [
        'quantity 2',
        { ...createBody('svc-pro-monthly'), line_items: [{ id: 'svc-pro-monthly', quantity: 2 }] },
        400,
        'invalid',
        '$.line_items[0].quantity',
      ],
      [
        'two items',
        {
          ...createBody('svc-pro-monthly'),
          line_items: [{ id: 'svc-pro-monthly' }, { id: 'svc-pro-annual' }],
        },
        400,
        'invalid',
        '$.line_items',
      ],
      ['no items', { ...createBody('svc-pro-monthly'), line_items: [] }, 400, 'invalid', '$.line_items'],
      ['missing items', { currency: 'usd', capabilities: {} }, 400, 'missing', '$.line_items'],
      ['currency eur', { ...createBody('svc-pro-monthly'), currency: 'eur' }, 400, 'invalid', '$.currency'],
      ['missing currency', { line_items: [{ id: 'svc-pro-monthly' }] }, 400, 'missing', '$.currency'],
      ['invalid email', createBody('svc-pro-monthly', 'not-an-email'), 400, 'invalid', '$.buyer.email'],
      ['overlong item id', createBody(`svc-${'x'.repeat(300)}`), 400, 'invalid', '$.line_items[0].id'],
      [
        'capabilities not an object',
        { ...createBody('svc-pro-monthly'), capabilities: 'all' },
        400,
        'invalid',
      ],
      ['an array', [createBody('svc-pro-monthly')], 400, 'invalid', '$'],
    ];
    for (const [name, body, status, code, param] of cases) {
      const error = expectError(await acp.create(body), status, code, param);
      assert.ok(error.message.length > 0, name);
    }
    const sessions = await runtime.database.db.selectFrom('checkout_sessions').select('id').execute();
    assert.equal(sessions.length, 0);
  });

  it('accepts only the psp_spt card handler with a shared payment token on complete', async (t) => {
    const { runtime, mintToken, counts } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly', 'a@example.com')), 201);
    const token = await mintToken();
    const paymentData = (changes: Record<string, unknown>, credential: Record<string, unknown> = {}) => ({
      payment_data: {
        handler_id: 'psp_spt',
        instrument: { type: 'card', credential: { type: 'spt', token, ...credential } },
        ...changes,
      },
    });
    const cases: [unknown, string, string][] = [
      [paymentData({ handler_id: 'card_tokenized' }), 'invalid', '$.payment_data.handler_id'],
      [
        paymentData({ instrument: { type: 'bank', credential: { type: 'spt', token } } }),
        'invalid',
        '$.payment_data.instrument.type',
      ],
      [paymentData({}, { type: 'vt' }), 'invalid', '$.payment_data.instrument.credential.type'],
      [paymentData({}, { token: '' }), 'invalid', '$.payment_data.instrument.credential.token'],
      [paymentData({}, { token: 'x'.repeat(600) }), 'invalid', '$.payment_data.instrument.credential.token'],
      [{ payment_data: { token, provider: 'psp' } }, 'missing', '$.payment_data.handler_id'],
      [{}, 'missing', '$.payment_data'],
    ];
    for (const [body, code, param] of cases) {
      const error = expectError(await acp.complete(session.id, body), 400, code, param);
      assert.match(error.message, /\$\.payment_data/);
    }
    const handler = expectError(await acp.complete(session.id, cases[0]?.[0]), 400, 'invalid');
    assert.equal(handler.message, '$.payment_data.handler_id must be "psp_spt".');
    assert.equal((await counts()).paymentIntents, 0);
    assert.equal(expectSession(await acp.complete(session.id, completeBody(token))).status, 'completed');
  });

  it('answers malformed JSON, a foreign media type and an oversized body in ACP format', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const post = (headers: Record<string, string>, payload: string) =>
      acp.raw('POST', '/api/acp/checkout_sessions', { 'idempotency-key': randomUUID(), ...headers }, payload);
    expectError(await post(JSON_HEADERS, '{"line_items":'), 400, 'invalid_json');
    expectError(
      await post({ 'content-type': 'application/xml' }, '<session/>'),
      415,
      'unsupported_media_type',
    );
    const oversized = JSON.stringify({
      ...createBody('svc-pro-monthly'),
      pad: 'x'.repeat(runtime.config.bodyLimitBytes),
    });
    expectError(await post(JSON_HEADERS, oversized), 413, 'request_too_large');
    expectError(await post(JSON_HEADERS, 'null'), 400, 'invalid', '$');
  });

  it('refuses a malformed cancel intent trace but any reason code', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly')), 201);
    expectError(
      await acp.cancel(session.id, { intent_trace: 'too pricey' }),
      400,
      'invalid',
      '$.intent_trace',
    );
    expectError(
      await acp.cancel(session.id, { intent_trace: {} }),
      400,
      'missing',
      '$.intent_trace.reason_code',
    );
    const canceled = await acp.cancel(session.id, {
      intent_trace: { reason_code: 'a_reason_from_the_future' },
    });
    assert.equal(expectSession(canceled).status, 'canceled');
  });
});
