import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { type Channel, createSession } from '../../src/checkout/index.ts';
import { assertAcpCompletedSession, assertAcpError, assertAcpSession } from '../helpers/acp-schema.ts';
import { testDialect } from '../helpers/database.ts';
import { type PurchaseFixture, startPurchaseFixture } from '../helpers/purchase.ts';
import { assertUcpCheckout, assertUcpErrorResponse } from '../helpers/ucp-schema.ts';

const PAIRS = 40;
const OLD_ITEM = { id: 'svc-starter-monthly', amount: 9_900 };
const NEW_ITEM = { id: 'svc-enterprise-annual', amount: 1_999_000 };

interface Reply {
  status: number;
  body: unknown;
}

/** One checkout protocol as an agent speaks it, over one instance's HTTP app. */
interface Agent {
  complete(id: string, token: string): Promise<Reply>;
  cancel(id: string): Promise<Reply>;
  changeItem(id: string, itemId: string): Promise<Reply>;
  get(id: string): Promise<Reply>;
}

/** What every reply of a session route must be: the session, or the protocol's own error body. */
interface Protocol {
  agentOn(app: FastifyInstance): Agent;
  /** The session's status and total in the protocol's words; fails unless the body is a valid session. */
  session(reply: Reply): { status: string; total: number };
  /** Fails unless the reply is a 4xx in the protocol's error format; returns its code. */
  errorCode(reply: Reply): string;
  ready: string;
  completed: string;
  canceled: string;
}

async function inject(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PUT',
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Reply> {
  const response = await app.inject({
    method,
    url,
    headers: {
      ...headers,
      ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: response.statusCode, body: response.body === '' ? undefined : response.json() };
}

function totalOf(totals: { type: string; amount: number }[]): number {
  const total = totals.find((line) => line.type === 'total');
  assert.ok(total, 'the session shows a total');
  return total.amount;
}

const ACP: Protocol = {
  agentOn(app) {
    const base = '/api/acp/checkout_sessions';
    return {
      complete: (id, token) =>
        inject(
          app,
          'POST',
          `${base}/${id}/complete`,
          {},
          {
            payment_data: {
              handler_id: 'psp_spt',
              instrument: { type: 'card', credential: { type: 'spt', token } },
            },
          },
        ),
      cancel: (id) => inject(app, 'POST', `${base}/${id}/cancel`, {}, {}),
      changeItem: (id, itemId) => inject(app, 'POST', `${base}/${id}`, {}, { line_items: [{ id: itemId }] }),
      get: (id) => inject(app, 'GET', `${base}/${id}`, {}),
    };
  },
  session(reply) {
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const body = reply.body as { status: string; totals: { type: string; amount: number }[] };
    if (body.status === 'completed') assertAcpCompletedSession(body);
    else assertAcpSession(body);
    return { status: body.status, total: totalOf(body.totals) };
  },
  errorCode(reply) {
    assert.ok(
      reply.status >= 400 && reply.status < 500,
      `a 4xx, not ${reply.status}: ${JSON.stringify(reply.body)}`,
    );
    assertAcpError(reply.body);
    return (reply.body as { code: string }).code;
  },
  ready: 'ready_for_payment',
  completed: 'completed',
  canceled: 'canceled',
};

const UCP_AGENT = { 'ucp-agent': 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"' };

const UCP: Protocol = {
  agentOn(app) {
    const base = '/api/ucp/v1/checkout-sessions';
    const lineItems = (itemId: string) => [{ item: { id: itemId }, quantity: 1 }];
    return {
      complete: (id, token) =>
        inject(app, 'POST', `${base}/${id}/complete`, UCP_AGENT, {
          payment: {
            instruments: [
              {
                id: 'instr_1',
                handler_id: 'psp_payments',
                type: 'card',
                selected: true,
                credential: { type: 'psp_payment_token', token },
              },
            ],
          },
        }),
      cancel: (id) => inject(app, 'POST', `${base}/${id}/cancel`, UCP_AGENT),
      changeItem: (id, itemId) =>
        inject(app, 'PUT', `${base}/${id}`, UCP_AGENT, {
          line_items: lineItems(itemId),
          buyer: { email: 'racer@example.com' },
        }),
      get: (id) => inject(app, 'GET', `${base}/${id}`, UCP_AGENT),
    };
  },
  session(reply) {
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assertUcpCheckout(reply.body);
    const body = reply.body as { status: string; totals: { type: string; amount: number }[] };
    return { status: body.status, total: totalOf(body.totals) };
  },
  errorCode(reply) {
    assert.ok(
      reply.status >= 400 && reply.status < 500,
      `a 4xx, not ${reply.status}: ${JSON.stringify(reply.body)}`,
    );
    assertUcpErrorResponse(reply.body);
    return (reply.body as { messages: { code: string }[] }).messages[0]?.code ?? '';
  },
  ready: 'ready_for_complete',
  completed: 'completed',
  canceled: 'canceled',
};

const PROTOCOLS: Record<Channel, Protocol> = { acp: ACP, ucp: UCP };

interface RaceSetup {
  fixture: PurchaseFixture;
  /** The instances the two racing requests of a pair go to (the same one, or one each). */
  apps: [FastifyInstance, FastifyInstance];
}

async function oneInstance(t: TestContext): Promise<RaceSetup> {
  const fixture = await startPurchaseFixture(t);
  return { fixture, apps: [fixture.runtime.app, fixture.runtime.app] };
}

async function twoInstances(t: TestContext): Promise<RaceSetup> {
  const fixture = await startPurchaseFixture(t);
  const second = await fixture.startSecondInstance();
  return { fixture, apps: [fixture.runtime.app, second.app] };
}

interface Racer {
  sessionId: string;
  token: string;
}

async function openSessions({ fixture }: RaceSetup, channel: Channel): Promise<Racer[]> {
  return Promise.all(
    Array.from({ length: PAIRS }, async () => {
      const created = await createSession(fixture.runtime.checkout, {
        channel,
        itemId: OLD_ITEM.id,
        buyer: { email: 'racer@example.com' },
      });
      assert.ok(created.ok);
      return { sessionId: created.value.id, token: await fixture.mintToken() };
    }),
  );
}

/**
 * Both requests of pair i, one of them (alternately) started a little later: from no delay to a
 * few microtask turns to a millisecond or two, so the pairs meet at every step of each other's way.
 */
async function race<A, B>(i: number, first: () => Promise<A>, second: () => Promise<B>): Promise<[A, B]> {
  const later = async <T>(request: () => Promise<T>): Promise<T> => {
    for (let turn = 0; turn < ((i >> 1) % 5) * 10; turn++) await Promise.resolve();
    if (i >= 10) await sleep(Math.floor(i / 10) - 1);
    return request();
  };
  return i % 2 === 0 ? Promise.all([first(), later(second)]) : Promise.all([later(first), second()]);
}

/** What the PSP sandbox took from the token: its captured amount (a token is single use). */
function charged(fixture: PurchaseFixture, token: string): number {
  const granted = fixture.sandbox.state.getGrantedToken(token);
  assert.ok(granted, `the sandbox knows ${token}`);
  return granted.usage_details.amount_captured.value;
}

async function assertOrdersMatchCharges(fixture: PurchaseFixture, completed: number): Promise<void> {
  const counts = await fixture.counts();
  assert.equal(counts.succeeded, completed, 'one charge per completed session');
  assert.equal(counts.orders, completed, 'one order per completed session');
  assert.equal(counts.workspaces, completed, 'one workspace per completed session');
}

async function completeRacingCancel(setup: RaceSetup, channel: Channel): Promise<void> {
  const protocol = PROTOCOLS[channel];
  const [agentA, agentB] = [protocol.agentOn(setup.apps[0]), protocol.agentOn(setup.apps[1])];
  const racers = await openSessions(setup, channel);
  const results = await Promise.all(
    racers.map((racer, i) =>
      race(
        i,
        () => agentA.complete(racer.sessionId, racer.token),
        () => agentB.cancel(racer.sessionId),
      ),
    ),
  );
  let completed = 0;
  for (const [i, [completeReply, cancelReply]] of results.entries()) {
    const racer = racers[i] as Racer;
    const final = protocol.session(await agentA.get(racer.sessionId));
    const amount = charged(setup.fixture, racer.token);
    if (final.status === protocol.canceled) {
      assert.equal(amount, 0, `pair ${i}: a canceled session was charged ${amount}`);
      assert.equal(protocol.session(cancelReply).status, protocol.canceled);
      protocol.errorCode(completeReply);
    } else {
      assert.equal(final.status, protocol.completed, `pair ${i}: ends canceled or completed`);
      assert.equal(amount, final.total, `pair ${i}: the completed session's total is what was charged`);
      assert.equal(protocol.session(completeReply).status, protocol.completed);
      protocol.errorCode(cancelReply);
      completed++;
    }
  }
  await assertOrdersMatchCharges(setup.fixture, completed);
}

async function completeRacingUpdate(setup: RaceSetup, channel: Channel): Promise<void> {
  const protocol = PROTOCOLS[channel];
  const [agentA, agentB] = [protocol.agentOn(setup.apps[0]), protocol.agentOn(setup.apps[1])];
  const racers = await openSessions(setup, channel);
  const results = await Promise.all(
    racers.map((racer, i) =>
      race(
        i,
        () => agentA.complete(racer.sessionId, racer.token),
        () => agentB.changeItem(racer.sessionId, NEW_ITEM.id),
      ),
    ),
  );
  for (const [i, [completeReply, updateReply]] of results.entries()) {
    const racer = racers[i] as Racer;
    const final = protocol.session(await agentA.get(racer.sessionId));
    assert.equal(final.status, protocol.completed, `pair ${i}: the complete went through`);
    assert.equal(protocol.session(completeReply).total, final.total);
    assert.equal(charged(setup.fixture, racer.token), final.total, `pair ${i}: total shown = amount charged`);
    const updateWon = updateReply.status === 200;
    if (!updateWon) protocol.errorCode(updateReply);
    assert.equal(
      final.total,
      updateWon ? NEW_ITEM.amount : OLD_ITEM.amount,
      `pair ${i}: an update is paid for if and only if it was accepted`,
    );
  }
  await assertOrdersMatchCharges(setup.fixture, PAIRS);
}

/** A 200 session or a 4xx error in the protocol's format: never a 5xx. */
function sessionOrError(protocol: Protocol, reply: Reply): void {
  if (reply.status === 200) protocol.session(reply);
  else protocol.errorCode(reply);
}

async function completeRacingComplete(setup: RaceSetup, channel: Channel): Promise<void> {
  const protocol = PROTOCOLS[channel];
  const [agentA, agentB] = [protocol.agentOn(setup.apps[0]), protocol.agentOn(setup.apps[1])];
  const racers = await openSessions(setup, channel);
  const declining = await Promise.all(
    racers.map(() => setup.fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclined' })),
  );
  const results = await Promise.all(
    racers.map((racer, i) =>
      race(
        i,
        () => agentA.complete(racer.sessionId, declining[i] as string),
        () => agentB.complete(racer.sessionId, racer.token),
      ),
    ),
  );
  let completed = 0;
  for (const [i, replies] of results.entries()) {
    const racer = racers[i] as Racer;
    for (const reply of replies) sessionOrError(protocol, reply);
    const final = protocol.session(await agentA.get(racer.sessionId));
    const amount = charged(setup.fixture, racer.token);
    if (final.status === protocol.completed) {
      assert.equal(amount, final.total, `pair ${i}: the completed session's total is what was charged`);
      completed++;
    } else {
      assert.equal(
        final.status,
        protocol.ready,
        `pair ${i}: declined, the session is ready for another token`,
      );
      assert.equal(amount, 0, `pair ${i}: a session still open was charged ${amount}`);
    }
  }
  await assertOrdersMatchCharges(setup.fixture, completed);
}

describe(`checkout races on ${testDialect}`, () => {
  for (const channel of ['acp', 'ucp'] as const) {
    it(`${channel}: complete racing cancel, ${PAIRS} pairs: a canceled session is never charged, the loser gets a ${channel} error`, async (t) => {
      await completeRacingCancel(await oneInstance(t), channel);
    });

    it(`${channel}: complete racing update, ${PAIRS} pairs: the amount charged is the total of the session that completed`, async (t) => {
      await completeRacingUpdate(await oneInstance(t), channel);
    });

    it(`${channel}: a declined complete racing a good one, ${PAIRS} pairs: charged at most once, never a 5xx`, async (t) => {
      await completeRacingComplete(await oneInstance(t), channel);
    });
  }
});

describe('checkout races across two instances on one PostgreSQL', {
  skip: testDialect !== 'postgres',
}, () => {
  for (const channel of ['acp', 'ucp'] as const) {
    it(`${channel}: complete on one instance racing cancel on the other`, async (t) => {
      await completeRacingCancel(await twoInstances(t), channel);
    });

    it(`${channel}: complete on one instance racing an update on the other`, async (t) => {
      await completeRacingUpdate(await twoInstances(t), channel);
    });

    it(`${channel}: a declined complete on one instance racing a good one on the other`, async (t) => {
      await completeRacingComplete(await twoInstances(t), channel);
    });
  }
});
