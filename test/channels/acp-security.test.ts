import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it, type TestContext } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../src/config.ts';
import { loggerOptions } from '../../src/http/logging.ts';
import { createStripeAdapter } from '../../src/psp/index.ts';
import { startPspSandbox } from '../../src/psp/sandbox/main.ts';
import { createRuntime } from '../../src/runtime.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';
import { API_VERSION, mintToken, SANDBOX_KEY } from '../helpers/purchase.ts';
import { startTestRuntime } from '../helpers/runtime.ts';
import { completeBody, createBody, expectError, expectSession, injectingClient } from './acp-client.ts';

/** A service whose log lines (at trace level) are captured, paying through the PSP sandbox. */
async function startLoggedService(t: TestContext) {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).trim().split('\n'));
      done();
    },
  });
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  const sandbox = await startPspSandbox({ secretKey: SANDBOX_KEY, now: () => clock.now() });
  t.after(() => sandbox.close());
  const database = await createTestDatabase();
  t.after(() => database.close());
  const runtime = await createRuntime(loadConfig({ NODE_ENV: 'test', BASE_URL: 'http://svc.test' }), {
    clock,
    database,
    logger: pino(loggerOptions('trace'), sink),
    paymentProvider: createStripeAdapter({
      secretKey: SANDBOX_KEY,
      apiBase: new URL(sandbox.url),
      apiVersion: API_VERSION,
    }),
  });
  t.after(() => runtime.close());
  return {
    runtime,
    lines,
    mint: (paymentMethod?: string) => mintToken(sandbox.url, clock, { paymentMethod }),
  };
}

describe(`ACP security on ${testDialect}`, () => {
  it('never writes a session id or a shared payment token to the log', async (t) => {
    const { runtime, lines, mint } = await startLoggedService(t);
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
