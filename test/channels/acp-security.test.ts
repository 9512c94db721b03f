// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';
import { startTestRuntime } from '../helpers/runtime.ts';
import { completeBody, createBody, expectError, expectSession, injectingClient } from './acp-client.ts';

describe(`ACP security on ${testDialect}`, () => {
  it('never writes a session id or a shared payment token to the log', async (t) => {
    const { runtime, logs: lines, mintToken } = await startPurchaseFixture(t, { captureLogs: true });
    const mint = (paymentMethod?: string) => mintToken({ paymentMethod });
    const acp = injectingClient(runtime.app);
    const session = expectSession(await acp.create(createBody('svc-pro-monthly')), 201);
    expectSession(await acp.update(session.id, { buyer: { email: 'a@example.com' } }));
    const declinedToken = await mint('pm_card_visa_chargeDeclined');
    const rejectedToken = await mint();
    const paidToken = await mint();
    expectSession(await acp.complete(session.id, completeBody(declinedToken)));
    const wrongHandler = completeBody(rejectedToken);
    wrongHandler.payment_data.handler_id = 'other';
    expectError(await acp.complete(session.id, wrongHandler), 400, 'invalid');
    expectSession(await acp.complete(session.id, completeBody(paidToken)));
    expectSession(await acp.get(session.id));
    expectError(await acp.cancel(session.id), 405, 'session_not_modifiable');

    const completed = lines.map((line) => JSON.parse(line)).filter((e) => e.msg === 'request completed');
    assert.ok(completed.some((e) => e.route === '/api/acp/checkout_sessions/:id/complete'));
    const all = lines.join('\n');
    for (const secret of [session.id, declinedToken, rejectedToken, paidToken]) {
      assert.ok(!all.includes(secret), `the log holds ${secret.slice(0, 6)}...`);
    }
  });

  it('limits requests per client IP with 429 rate_limited and Retry-After', async (t) => {
    const { app } = await startTestRuntime(t, { env: { RATE_LIMIT_MAX: '3' } });
    const acp = injectingClient(app);
    for (let i = 0; i < 3; i++) expectError(await acp.get('cs_unknown'), 404, 'not_found');
    const limited = await acp.create(createBody('svc-pro-monthly'));
    expectError(limited, 429, 'rate_limited');
    assert.match(limited.headers['retry-after'] ?? '', /^[1-9]\d*$/);
  });
});
