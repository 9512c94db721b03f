// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { SELLABLE_ITEMS } from '../../src/catalog/index.ts';
import type { UcpCheckout, UcpErrorResponse } from '../../src/channels/ucp/schemas.ts';
import { crashOnceAt } from '../../src/purchase/index.ts';
import { HOUR_MS, MINUTE_MS } from '../../src/shared/clock.ts';
import { testDialect } from '../helpers/database.ts';
import { freezeOnceAt, mintToken, startPurchaseFixture } from '../helpers/purchase.ts';
import { startTestRuntime } from '../helpers/runtime.ts';
import {
  assertUcpBusinessProfile,
  assertUcpCheckout,
  assertUcpErrorResponse,
} from '../helpers/ucp-schema.ts';

const SESSIONS = '/api/ucp/v1/checkout-sessions';
const AGENT = 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"';

interface Answer {
  status: number;
  header(name: string): string | undefined;
  body: unknown;
}

interface SendOptions {
  body?: unknown;
  /** Undefined: a fresh key on POST and PUT; null: no key at all. */
  key?: string | null;
  headers?: Record<string, string>;
  /** A raw payload instead of JSON. */
  raw?: string;
}

type Method = 'GET' | 'POST' | 'PUT';
type Send = (method: Method, path: string, options?: SendOptions) => Promise<Answer>;

function requestHeaders(method: Method, options: SendOptions): Record<string, string> {
  const key = options.key === undefined ? (method === 'GET' ? null : randomUUID()) : options.key;
  return {
    'ucp-agent': AGENT,
    ...(options.body !== undefined || options.raw !== undefined
      ? { 'content-type': 'application/json' }
      : {}),
    ...(key === null ? {} : { 'idempotency-key': key }),
    ...options.headers,
  };
}

function payloadOf(options: SendOptions): string | undefined {
  return options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
}

function viaInject(app: FastifyInstance): Send {
  return async (method, path, options = {}) => {
    const payload = payloadOf(options);
    const res = await app.inject({
      method,
      url: path,
      headers: requestHeaders(method, options),
      ...(payload === undefined ? {} : { payload }),
    });
    return {
      status: res.statusCode,
      header: (name) => {
        const value = res.headers[name];
        return value === undefined ? undefined : String(value);
      },
      body: res.body === '' ? undefined : res.json(),
    };
  };
}

function viaHttp(baseUrl: string): Send {
  return async (method, path, options = {}) => {
    const payload = payloadOf(options);
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: requestHeaders(method, options),
      ...(payload === undefined ? {} : { body: payload }),
    });
    const text = await res.text();
    return {
      status: res.status,
      header: (name) => res.headers.get(name) ?? undefined,
      body: text === '' ? undefined : JSON.parse(text),
    };
  };
}

function checkout(answer: Answer, status = 200): UcpCheckout {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assertUcpCheckout(answer.body);
  return answer.body as UcpCheckout;
}

function ucpError(answer: Answer, status: number, code: string): UcpErrorResponse {
  assert.equal(answer.status, status, JSON.stringify(answer.body));
  assertUcpErrorResponse(answer.body);
  const body = answer.body as UcpErrorResponse;
  assert.equal(body.messages[0]?.code, code, JSON.stringify(body));
  return body;
}

function createBody(itemId: string, buyer?: Record<string, string>) {
  return { line_items: [{ item: { id: itemId }, quantity: 1 }], ...(buyer ? { buyer } : {}) };
}

function completeBody(token: string, instrument: Record<string, unknown> = {}) {
  return {
    payment: {
      instruments: [
        {
          id: 'instr_1',
          handler_id: 'psp_payments',
          type: 'card',
          selected: true,
          credential: { type: 'psp_payment_token', token },
          ...instrument,
        },
      ],
    },
  };
}

const codes = (body: UcpCheckout) => (body.messages ?? []).map((message) => message.code);

/** Opens a session; `email: null` leaves the buyer out. */
async function openSession(send: Send, itemId = 'svc-pro-monthly', email: string | null = 'a@example.com') {
  return checkout(
    await send('POST', SESSIONS, { body: createBody(itemId, email ? { email } : undefined) }),
    201,
  );
}

describe(`UCP channel on ${testDialect}`, () => {
  it('buys each of the six items end to end over HTTP: order, one charge, workspace, invitation', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const { runtime, sandbox, smtp } = fixture;
    const address = await runtime.app.listen({ port: 0, host: '127.0.0.1' });
    const send = viaHttp(address);

    for (const [index, item] of SELLABLE_ITEMS.entries()) {
      const email = `buyer${index}@example.com`;
      let session: UcpCheckout;
      if (index % 2 === 0) {
        session = await openSession(send, item.id, email);
        assert.equal(session.status, 'ready_for_complete');
        assert.deepEqual(session.buyer, { email });
      } else {
        const incomplete = await openSession(send, item.id, null);
        assert.equal(incomplete.status, 'incomplete');
        assert.deepEqual(incomplete.messages, [
          {
            type: 'error',
            code: 'missing',
            path: '$.buyer.email',
            content: 'A buyer email is required; the workspace owner invitation is sent to it.',
            severity: 'recoverable',
          },
        ]);
        session = checkout(
          await send('PUT', `${SESSIONS}/${incomplete.id}`, {
            body: createBody(item.id, { email, first_name: 'Ada', last_name: 'Lovelace' }),
          }),
        );
        assert.equal(session.status, 'ready_for_complete');
        assert.deepEqual(session.buyer, { email, first_name: 'Ada', last_name: 'Lovelace' });
      }
      assert.match(session.id, /^cs_[A-Za-z0-9_-]{43}$/);
      assert.deepEqual(session.links, [
        { type: 'terms_of_service', url: 'http://svc.test/legal/terms' },
        { type: 'privacy_policy', url: 'http://svc.test/legal/privacy' },
      ]);
      assert.deepEqual(session.totals, [
        { type: 'subtotal', amount: item.price.amount },
        { type: 'total', amount: item.price.amount },
      ]);
      assert.equal(session.line_items[0]?.item.price, item.price.amount);

      const completed = checkout(
        await send('POST', `${SESSIONS}/${session.id}/complete`, {
          body: completeBody(await fixture.mintToken()),
        }),
      );
      assert.equal(completed.status, 'completed');
      assert.equal(completed.buyer, undefined, 'a completed session no longer shows the buyer');
      assert.equal(completed.messages, undefined);
      assert.match(completed.order?.id ?? '', /^ord_/);
      assert.match(
        completed.order?.permalink_url ?? '',
        new RegExp(`^http://svc\\.test/orders/${completed.order?.id}\\?key=[A-Za-z0-9_-]{43}$`),
      );

      const intents = sandbox.state.listPaymentIntents();
      assert.equal(intents.length, index + 1, 'exactly one payment intent per purchase');
      assert.deepEqual(
        intents.filter((intent) => intent.amount === item.price.amount).map((intent) => intent.status),
        ['succeeded'],
      );
      const order = await runtime.database.db
        .selectFrom('orders')
        .selectAll()
        .where('id', '=', completed.order?.id ?? '')
        .executeTakeFirstOrThrow();
      assert.deepEqual([order.item_id, order.amount, order.buyer_email], [item.id, item.price.amount, email]);
      const workspace = await runtime.database.db
        .selectFrom('workspaces')
        .selectAll()
        .where('id', '=', order.workspace_id)
        .executeTakeFirstOrThrow();
      assert.equal(workspace.plan, item.price.plan);

      await runtime.jobs.drain();
      const invitation = (await smtp.waitFor(index + 1)).at(-1);
      assert.ok(JSON.stringify(invitation?.to).includes(email), 'the invitation goes to the buyer');

      const read = checkout(await send('GET', `${SESSIONS}/${session.id}`));
      assert.deepEqual(read, completed);
    }
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 6,
      succeeded: 6,
      orders: 6,
      workspaces: 6,
      emails: 6,
    });
  });

  it('keeps a declined session open with a UCP message, then takes another token', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const attempts: [string, string][] = [
      ['pm_card_visa_chargeDeclined', 'payment_failed'],
      ['pm_card_visa_chargeDeclinedInsufficientFunds', 'payment_failed'],
      ['pm_card_authenticationRequired', 'requires_3ds'],
    ];
    for (const [paymentMethod, code] of attempts) {
      const token = await fixture.mintToken({ paymentMethod });
      const declined = checkout(
        await send('POST', `${SESSIONS}/${session.id}/complete`, { body: completeBody(token) }),
      );
      assert.equal(declined.status, 'ready_for_complete');
      assert.deepEqual(codes(declined), [code]);
      assert.equal(declined.messages?.[0]?.severity, 'recoverable');
      assert.equal(declined.order, undefined);
    }
    const insufficient = checkout(await send('GET', `${SESSIONS}/${session.id}`));
    assert.deepEqual(codes(insufficient), ['requires_3ds'], 'the latest decline is shown');

    const paid = checkout(
      await send('POST', `${SESSIONS}/${session.id}/complete`, {
        body: completeBody(await fixture.mintToken()),
      }),
    );
    assert.equal(paid.status, 'completed');
    assert.equal(paid.messages, undefined);
    const counts = await fixture.counts();
    assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
  });

  it('names the decline reason of an insufficient-funds card in the message', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const token = await fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclinedInsufficientFunds' });
    const declined = checkout(
      await send('POST', `${SESSIONS}/${session.id}/complete`, { body: completeBody(token) }),
    );
    assert.match(declined.messages?.[0]?.content ?? '', /insufficient_funds/);
  });

  it('asks for the buyer email before charging anything', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send, 'svc-pro-monthly', null);
    const answer = checkout(
      await send('POST', `${SESSIONS}/${session.id}/complete`, {
        body: completeBody(await fixture.mintToken()),
      }),
    );
    assert.equal(answer.status, 'incomplete');
    assert.deepEqual(codes(answer), ['missing']);
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 0);
  });

  it('replays a repeated request with the same key and body without charging again', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const createKey = randomUUID();
    const body = createBody('svc-starter-annual', { email: 'a@example.com' });
    const created = await send('POST', SESSIONS, { body, key: createKey });
    const again = await send('POST', SESSIONS, { body, key: createKey });
    assert.deepEqual([again.status, again.body], [created.status, created.body]);
    assert.equal(again.header('idempotent-replayed'), 'true');
    assert.equal(again.header('idempotency-key'), createKey);
    const session = checkout(again, 201);
    assert.equal(
      await fixture.runtime.database.db
        .selectFrom('checkout_sessions')
        .select('id')
        .execute()
        .then((rows) => rows.length),
      1,
    );

    const completeKey = randomUUID();
    const pay = completeBody(await fixture.mintToken());
    const first = await send('POST', `${SESSIONS}/${session.id}/complete`, { body: pay, key: completeKey });
    const replay = await send('POST', `${SESSIONS}/${session.id}/complete`, { body: pay, key: completeKey });
    assert.equal(checkout(first).status, 'completed');
    assert.deepEqual([replay.status, replay.body], [first.status, first.body]);
    assert.equal(replay.header('idempotent-replayed'), 'true');
    assert.equal(first.header('idempotent-replayed'), undefined);
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 1);

    const otherToken = completeBody(await fixture.mintToken());
    ucpError(
      await send('POST', `${SESSIONS}/${session.id}/complete`, { body: otherToken, key: completeKey }),
      409,
      'idempotency_conflict',
    );
    ucpError(
      await send('POST', `${SESSIONS}/${session.id}/complete`, { body: pay }),
      409,
      'checkout_not_modifiable',
    );
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 1);
  });

  it('needs an Idempotency-Key of at least 16 characters on every POST and PUT', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const body = createBody('svc-pro-monthly');
    ucpError(await send('POST', SESSIONS, { body, key: null }), 400, 'idempotency_key_missing');
    ucpError(await send('POST', SESSIONS, { body, key: 'short-key' }), 400, 'idempotency_key_invalid');
    ucpError(await send('POST', SESSIONS, { body, key: 'k'.repeat(256) }), 400, 'idempotency_key_invalid');
    const session = await openSession(send);
    const paths: [Method, string, unknown][] = [
      ['PUT', `${SESSIONS}/${session.id}`, body],
      ['POST', `${SESSIONS}/${session.id}/complete`, completeBody('spt_unused')],
      ['POST', `${SESSIONS}/${session.id}/cancel`, undefined],
    ];
    for (const [method, path, payload] of paths) {
      ucpError(await send(method, path, { body: payload, key: null }), 400, 'idempotency_key_missing');
    }
    assert.equal(checkout(await send('GET', `${SESSIONS}/${session.id}`)).status, 'ready_for_complete');
  });

  it('answers 409 with Retry-After while the first request with a key is still running', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const key = randomUUID();
    const body = completeBody(await fixture.mintToken());
    fixture.sandbox.faults.latency(300);
    const [first, second] = await Promise.all([
      send('POST', `${SESSIONS}/${session.id}/complete`, { body, key }),
      new Promise((resolve) => setTimeout(resolve, 50)).then(() =>
        send('POST', `${SESSIONS}/${session.id}/complete`, { body, key }),
      ),
    ]);
    fixture.sandbox.faults.reset();
    assert.equal(checkout(first).status, 'completed');
    ucpError(second, 409, 'request_in_progress');
    assert.match(second.header('retry-after') ?? '', /^\d+$/);
    const replay = await send('POST', `${SESSIONS}/${session.id}/complete`, { body, key });
    assert.deepEqual(replay.body, first.body);
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 1);
  });

  it('answers the retry of a complete still held by a live instance 409, to look again within 3 s', async (t) => {
    const frozen = freezeOnceAt('after_claim');
    const fixture = await startPurchaseFixture(t, { failpoints: frozen.failpoints });
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const key = randomUUID();
    const body = completeBody(await fixture.mintToken());
    const complete = () => send('POST', `${SESSIONS}/${session.id}/complete`, { body, key });
    const died = complete();
    await frozen.reached;

    const early = await complete();
    assert.match(ucpError(early, 409, 'request_in_progress').messages[0]?.content ?? '', /in 3 s/);
    assert.equal(early.header('retry-after'), '3');
    fixture.clock.advance(29_000);
    const later = await complete();
    ucpError(later, 409, 'request_in_progress');
    assert.equal(later.header('retry-after'), '1');
    fixture.clock.advance(1_000);
    assert.equal(checkout(await complete()).status, 'completed');
    assert.deepEqual(
      fixture.sandbox.state.listPaymentIntents().map((intent) => intent.status),
      ['succeeded'],
    );
    frozen.kill();
    await died;
  });

  it('charges once when 20 completes with different keys race', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send, 'svc-enterprise-annual');
    fixture.sandbox.faults.latency(100);
    const tokens = await Promise.all(Array.from({ length: 20 }, () => fixture.mintToken()));
    const answers = await Promise.all(
      tokens.map((token) =>
        send('POST', `${SESSIONS}/${session.id}/complete`, { body: completeBody(token) }),
      ),
    );
    fixture.sandbox.faults.reset();
    const completed = answers.filter((answer) => answer.status === 200);
    assert.equal(completed.length, 1, JSON.stringify(answers.map((answer) => answer.status)));
    assert.equal(checkout(completed[0] as Answer).status, 'completed');
    for (const answer of answers.filter((a) => a.status !== 200)) {
      assert.equal(answer.status, 409);
      assertUcpErrorResponse(answer.body);
    }
    const intents = fixture.sandbox.state.listPaymentIntents();
    assert.deepEqual(
      intents.map((intent) => [intent.amount, intent.status]),
      [[1999000, 'succeeded']],
    );
  });

  it('answers 409 with Retry-After while a payment outcome is unknown, and shows the recovered purchase', async (t) => {
    const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt('after_charge') });
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const body = completeBody(await fixture.mintToken());
    const key = randomUUID();
    ucpError(await send('POST', `${SESSIONS}/${session.id}/complete`, { body, key }), 500, 'internal_error');
    const blocked = ucpError(
      await send('POST', `${SESSIONS}/${session.id}/complete`, {
        body: completeBody(await fixture.mintToken()),
      }),
      409,
      'checkout_busy',
    );
    assert.equal(blocked.messages[0]?.severity, 'recoverable');
    assert.match(blocked.messages[0]?.content ?? '', /repeat the request/);
    fixture.clock.advance(2 * MINUTE_MS);
    await fixture.runtime.jobs.runSweeps();
    assert.equal(checkout(await send('GET', `${SESSIONS}/${session.id}`)).status, 'completed');
    assert.equal((await fixture.counts()).succeeded, 1);
  });

  it('changes the plan with a PUT and prices it from the catalog, ignoring client-sent prices and ids', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send, 'svc-starter-monthly');
    const updated = checkout(
      await send('PUT', `${SESSIONS}/${session.id}`, {
        body: {
          id: 'cs_forged',
          status: 'completed',
          totals: [{ type: 'total', amount: 1 }],
          line_items: [{ id: 'li_9', item: { id: 'svc-pro-annual', price: 1, title: 'free' }, quantity: 1 }],
          buyer: { email: 'a@example.com' },
        },
      }),
    );
    assert.equal(updated.id, session.id);
    assert.equal(updated.status, 'ready_for_complete');
    assert.deepEqual(updated.line_items[0]?.item, {
      id: 'svc-pro-annual',
      title: 'Pro plan, one year prepaid, does not renew',
      price: 309900,
    });
    assert.deepEqual(updated.totals, [
      { type: 'subtotal', amount: 309900 },
      { type: 'total', amount: 309900 },
    ]);
    const paid = checkout(
      await send('POST', `${SESSIONS}/${session.id}/complete`, {
        body: completeBody(await fixture.mintToken()),
      }),
    );
    assert.equal(paid.status, 'completed');
    assert.deepEqual(
      fixture.sandbox.state.listPaymentIntents().map((intent) => intent.amount),
      [309900],
    );
  });

  it('treats a PUT as a full replacement: a buyer left out is removed', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const cleared = checkout(
      await send('PUT', `${SESSIONS}/${session.id}`, { body: createBody('svc-pro-monthly') }),
    );
    assert.equal(cleared.status, 'incomplete');
    assert.equal(cleared.buyer, undefined);
    assert.deepEqual(codes(cleared), ['missing']);
  });

  it('keeps the session and says why when a PUT names an item that is not for sale', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    for (const [itemId, code] of [
      ['svc-nothing', 'not_found'],
      ['svc-msp-monthly', 'item_unavailable'],
    ]) {
      const answer = checkout(
        await send('PUT', `${SESSIONS}/${session.id}`, {
          body: createBody(itemId as string, { email: 'a@example.com' }),
        }),
      );
      assert.equal(answer.line_items[0]?.item.id, 'svc-pro-monthly');
      assert.deepEqual(
        answer.messages?.map((message) => [message.code, message.path]),
        [[code, '$.line_items[0].item.id']],
      );
    }
  });

  it('cancels an open session and then refuses to change it', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const canceled = checkout(
      await send('POST', `${SESSIONS}/${session.id}/cancel`, {
        headers: { 'content-type': 'application/json' },
      }),
    );
    assert.equal(canceled.status, 'canceled');
    assert.equal(canceled.messages, undefined);
    const token = await fixture.mintToken();
    for (const [method, path, body] of [
      ['POST', `${SESSIONS}/${session.id}/cancel`, undefined],
      ['POST', `${SESSIONS}/${session.id}/complete`, completeBody(token)],
      ['PUT', `${SESSIONS}/${session.id}`, createBody('svc-pro-annual', { email: 'a@example.com' })],
    ] as [Method, string, unknown][]) {
      const refused = ucpError(await send(method, path, { body }), 409, 'checkout_not_modifiable');
      assert.equal(refused.messages[0]?.severity, 'unrecoverable');
    }
    assert.equal(checkout(await send('GET', `${SESSIONS}/${session.id}`)).status, 'canceled');
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 0);
  });

  it('answers an unknown session id with a 404 error_response', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const unknown = `cs_${'A'.repeat(43)}`;
    const read = ucpError(await send('GET', `${SESSIONS}/${unknown}`), 404, 'not_found');
    assert.equal(read.messages[0]?.severity, 'unrecoverable');
    ucpError(await send('GET', `${SESSIONS}/${'x'.repeat(150)}`), 404, 'not_found');
    ucpError(await send('POST', `${SESSIONS}/${unknown}/cancel`), 404, 'not_found');
    ucpError(
      await send('POST', `${SESSIONS}/${unknown}/complete`, { body: completeBody('spt_x') }),
      404,
      'not_found',
    );
    ucpError(
      await send('PUT', `${SESSIONS}/${unknown}`, { body: createBody('svc-pro-monthly') }),
      404,
      'not_found',
    );
  });

  it('shows a session past its hour as canceled with an expiry message and refuses to complete it', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    assert.equal(session.expires_at, new Date(fixture.clock.now().getTime() + HOUR_MS).toISOString());
    fixture.clock.advance(HOUR_MS);
    const expired = checkout(await send('GET', `${SESSIONS}/${session.id}`));
    assert.equal(expired.status, 'canceled');
    assert.deepEqual(
      expired.messages?.map((message) => [message.code, message.severity]),
      [['expired', 'unrecoverable']],
    );
    const refused = ucpError(
      await send('POST', `${SESSIONS}/${session.id}/complete`, {
        body: completeBody(await fixture.mintToken()),
      }),
      409,
      'checkout_not_modifiable',
    );
    assert.match(refused.messages[0]?.content ?? '', /expired/);
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 0);
  });

  it('answers bad input with a 4xx error_response, never a 500, and creates nothing', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const session = await openSession(send);
    const pay = `${SESSIONS}/${session.id}/complete`;
    const create = (body: unknown): [Method, string, SendOptions] => ['POST', SESSIONS, { body }];
    const complete = (instrument: Record<string, unknown>): [Method, string, SendOptions] => [
      'POST',
      pay,
      { body: completeBody('spt_x', instrument) },
    ];
    const instruments = completeBody('spt_x').payment.instruments;
    // [what, request, status, code, path of the message]
    const cases: [string, [Method, string, SendOptions], number, string, string?][] = [
      ['unknown item', create(createBody('svc-unknown')), 400, 'not_found', '$.line_items[0].item.id'],
      ['add-on', create(createBody('svc-addon-additional-framework')), 400, 'item_unavailable'],
      [
        'quantity 2',
        create({ line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: 2 }] }),
        400,
        'invalid',
        '$.line_items[0].quantity',
      ],
      [
        'two line items',
        create({ line_items: [createBody('a').line_items[0], createBody('b').line_items[0]] }),
        400,
        'invalid',
        '$.line_items',
      ],
      ['no line items', create({ buyer: { email: 'a@example.com' } }), 400, 'missing', '$.line_items'],
      [
        'invalid email',
        create(createBody('svc-pro-monthly', { email: 'not-an-email' })),
        400,
        'invalid',
        '$.buyer.email',
      ],
      ['overlong item id', create(createBody('x'.repeat(101))), 400, 'invalid', '$.line_items[0].item.id'],
      [
        'overlong name',
        create(createBody('svc-pro-monthly', { email: 'a@example.com', first_name: 'n'.repeat(101) })),
        400,
        'invalid',
        '$.buyer.first_name',
      ],
      ['JSON array', create([createBody('svc-pro-monthly')]), 400, 'invalid', '$'],
      ['malformed JSON', ['POST', SESSIONS, { raw: '{"line_items": [' }], 400, 'invalid_json'],
      [
        'prototype poisoning',
        ['POST', SESSIONS, { raw: '{"__proto__": {"x": 1}, "line_items": []}' }],
        400,
        'invalid_json',
      ],
      ['empty body', ['POST', SESSIONS, { raw: '' }], 400, 'invalid', '$'],
      [
        'oversized body',
        create({ ...createBody('svc-pro-monthly'), pad: 'x'.repeat(1_100_000) }),
        413,
        'body_too_large',
      ],
      [
        'form body',
        ['POST', SESSIONS, { raw: 'a=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
        415,
        'unsupported_media_type',
      ],
      [
        'wrong handler',
        complete({ handler_id: 'google_pay' }),
        400,
        'invalid',
        '$.payment.instruments[0].handler_id',
      ],
      [
        'wrong instrument type',
        complete({ type: 'wallet' }),
        400,
        'invalid',
        '$.payment.instruments[0].type',
      ],
      [
        'wrong credential type',
        complete({ credential: { type: 'pan', token: '4242424242424242' } }),
        400,
        'invalid',
        '$.payment.instruments[0].credential.type',
      ],
      ['not selected', complete({ selected: false }), 400, 'invalid', '$.payment.instruments[0].selected'],
      [
        'no selected flag',
        complete({ selected: undefined }),
        400,
        'missing',
        '$.payment.instruments[0].selected',
      ],
      [
        'no token',
        complete({ credential: { type: 'psp_payment_token' } }),
        400,
        'missing',
        '$.payment.instruments[0].credential.token',
      ],
      [
        'overlong token',
        complete({ credential: { type: 'psp_payment_token', token: 't'.repeat(256) } }),
        400,
        'invalid',
      ],
      [
        'two instruments',
        ['POST', pay, { body: { payment: { instruments: [...instruments, ...instruments] } } }],
        400,
        'invalid',
        '$.payment.instruments',
      ],
      [
        'no instruments',
        ['POST', pay, { body: { payment: { instruments: [] } } }],
        400,
        'invalid',
        '$.payment.instruments',
      ],
      ['no payment', ['POST', pay, { body: {} }], 400, 'missing', '$.payment'],
      [
        'string quantity on update',
        [
          'PUT',
          `${SESSIONS}/${session.id}`,
          { body: { line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: '1' }] } },
        ],
        400,
        'invalid',
        '$.line_items[0].quantity',
      ],
    ];
    for (const [what, [method, path, options], status, code, messagePath] of cases) {
      const answer = await send(method, path, options);
      assert.equal(answer.status, status, `${what}: ${JSON.stringify(answer.body)}`);
      assertUcpErrorResponse(answer.body);
      const [message] = (answer.body as UcpErrorResponse).messages;
      assert.equal(message?.code, code, what);
      if (messagePath) assert.equal(message?.path, messagePath, what);
    }
    const rows = await fixture.runtime.database.db.selectFrom('checkout_sessions').select('status').execute();
    assert.deepEqual(
      rows.map((row) => row.status),
      ['ready'],
    );
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 0);
  });

  it('checks the version in the UCP-Agent header and never needs the header', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const send = viaInject(fixture.runtime.app);
    const body = createBody('svc-pro-monthly');
    const old = ucpError(
      await send('POST', SESSIONS, {
        body,
        headers: { 'ucp-agent': 'profile="https://agent.example/.well-known/ucp"; version="2025-01-01"' },
      }),
      422,
      'version_unsupported',
    );
    assert.equal(old.messages[0]?.severity, 'unrecoverable');
    ucpError(
      await send('GET', `${SESSIONS}/cs_x`, {
        headers: { 'ucp-agent': 'profile="p", version="2026-01-23"' },
      }),
      422,
      'version_unsupported',
    );
    ucpError(
      await send('POST', SESSIONS, { body, headers: { 'ucp-agent': 'profile=<nope>' } }),
      400,
      'invalid_ucp_agent',
    );
    checkout(
      await send('POST', SESSIONS, {
        body,
        headers: { 'ucp-agent': 'profile="https://agent.example/.well-known/ucp"' },
      }),
      201,
    );
    checkout(await send('POST', SESSIONS, { body, headers: { 'ucp-agent': '' } }), 201);
    checkout(await send('POST', SESSIONS, { body, headers: { 'ucp-agent': 'version="2026-08-25"' } }), 201);
    const rows = await fixture.runtime.database.db.selectFrom('checkout_sessions').select('id').execute();
    assert.equal(rows.length, 3);
  });

  it('limits requests per client address with a 429 error_response and Retry-After', async (t) => {
    const runtime = await startTestRuntime(t, { env: { RATE_LIMIT_MAX: '3' } });
    const send = viaInject(runtime.app);
    for (let i = 0; i < 3; i++) ucpError(await send('GET', `${SESSIONS}/cs_unknown`), 404, 'not_found');
    const limited = ucpError(await send('GET', `${SESSIONS}/cs_unknown`), 429, 'rate_limited');
    assert.equal(limited.messages[0]?.severity, 'recoverable');
    const retryAfter = Number(
      (await send('POST', SESSIONS, { body: createBody('svc-pro-monthly') })).header('retry-after'),
    );
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  });

  it('serves the business profile at /.well-known/ucp, public and cacheable', async (t) => {
    const runtime = await startTestRuntime(t, {
      env: { BASE_URL: 'https://svc.example', PSP_NETWORK_PROFILE_ID: 'profile_test_61U92' },
    });
    const res = await runtime.app.inject({ method: 'GET', url: '/.well-known/ucp' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.equal(res.headers['cache-control'], 'public, max-age=3600');
    const profile = res.json();
    assertUcpBusinessProfile(profile);
    assert.equal(profile.ucp.version, '2026-08-25');
    assert.deepEqual(profile.ucp.services['dev.ucp.shopping'], [
      {
        version: '2026-08-25',
        transport: 'rest',
        spec: 'https://ucp.dev/2026-08-25/specification/overview/',
        schema: 'https://ucp.dev/2026-08-25/services/shopping/rest.openapi.json',
        endpoint: 'https://svc.example/api/ucp/v1',
      },
    ]);
    assert.deepEqual(profile.ucp.capabilities['dev.ucp.shopping.checkout'], [
      {
        version: '2026-08-25',
        spec: 'https://ucp.dev/2026-08-25/specification/shopping/checkout',
        schema: 'https://ucp.dev/2026-08-25/schemas/shopping/checkout.json',
      },
    ]);
    assert.deepEqual(profile.ucp.payment_handlers, {
      'com.psp.payments': [
        {
          id: 'psp_payments',
          version: '2026-08-25',
          available_instruments: [{ type: 'card' }],
          config: { network_profile_id: 'profile_test_61U92', credential_types: ['psp_payment_token'] },
        },
      ],
    });
    const etag = String(res.headers.etag);
    const cached = await runtime.app.inject({
      method: 'GET',
      url: '/.well-known/ucp',
      headers: { 'if-none-match': etag },
    });
    assert.equal(cached.statusCode, 304);
    assert.equal(cached.body, '');
  });

  it('never writes a session id or a payment token to the log', async (t) => {
    const { runtime, sandbox, clock, logs: lines } = await startPurchaseFixture(t, { captureLogs: true });
    const send = viaInject(runtime.app);
    const token = () => mintToken(sandbox.url, clock);

    const session = await openSession(send, 'svc-pro-monthly', null);
    checkout(
      await send('PUT', `${SESSIONS}/${session.id}`, {
        body: createBody('svc-pro-annual', { email: 'a@example.com' }),
      }),
    );
    const declinedToken = await mintToken(sandbox.url, clock, {
      paymentMethod: 'pm_card_visa_chargeDeclined',
    });
    checkout(await send('POST', `${SESSIONS}/${session.id}/complete`, { body: completeBody(declinedToken) }));
    const paidToken = await token();
    checkout(await send('POST', `${SESSIONS}/${session.id}/complete`, { body: completeBody(paidToken) }));
    checkout(await send('GET', `${SESSIONS}/${session.id}`));
    ucpError(await send('POST', `${SESSIONS}/${session.id}/cancel`), 409, 'checkout_not_modifiable');
    ucpError(await send('POST', `${SESSIONS}/${session.id}/complete`, { raw: '{' }), 400, 'invalid_json');
    const other = await openSession(send);
    checkout(await send('POST', `${SESSIONS}/${other.id}/cancel`));

    const routes = lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request completed');
    assert.ok(routes.some((entry) => entry.route === '/api/ucp/v1/checkout-sessions/:id/complete'));
    const all = lines.join('\n');
    for (const secret of [session.id, other.id, declinedToken, paidToken]) {
      assert.equal(all.includes(secret), false, 'a secret reached the log');
    }
  });
});
