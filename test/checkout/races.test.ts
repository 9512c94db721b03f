// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { type Channel, createSession } from '../../src/checkout/index.ts';
import { testDialect } from '../helpers/database.ts';
import { Holds, whileHeld } from '../helpers/holds.ts';
import { type PurchaseFixture, startPurchaseFixture } from '../helpers/purchase.ts';
import { PROTOCOLS, type Protocol, type Reply } from './agents.ts';

const PAIRS = 40;
const OLD_ITEM = { id: 'svc-starter-monthly', amount: 9_900 };
const NEW_ITEM = { id: 'svc-enterprise-annual', amount: 1_999_000 };
/** The "a payment is under way, retry" answers of ACP and UCP. */
const RETRY_LATER = new Set(['payment_in_progress', 'checkout_busy']);

interface RaceSetup {
  fixture: PurchaseFixture;
  /** Holds requests of the first instance at named places, to force one ordering of a pair. */
  holds: Holds;
  /** The instances the two racing requests of a pair go to (the same one, or one each). */
  apps: [FastifyInstance, FastifyInstance];
}

async function oneInstance(t: TestContext): Promise<RaceSetup> {
  const holds = new Holds();
  const fixture = await startPurchaseFixture(t, { failpoints: holds });
  return { fixture, holds, apps: [fixture.runtime.app, fixture.runtime.app] };
}

async function twoInstances(t: TestContext): Promise<RaceSetup> {
  const holds = new Holds();
  const fixture = await startPurchaseFixture(t, { failpoints: holds });
  const second = await fixture.startSecondInstance();
  return { fixture, holds, apps: [fixture.runtime.app, second.app] };
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

type Pair<A, B> = (racer: Racer, i: number) => Promise<[A, B]>;

/**
 * The first pairs in the orderings given (each forced with holds, so every outcome the design
 * allows happens at least once on every database), then all the other pairs at once.
 */
async function runPairs<A, B>(racers: Racer[], forced: Pair<A, B>[], racing: Pair<A, B>): Promise<[A, B][]> {
  const results: [A, B][] = [];
  for (const [i, force] of forced.entries()) results.push(await force(racers[i] as Racer, i));
  const rest = racers.slice(forced.length).map((racer, j) => racing(racer, forced.length + j));
  results.push(...(await Promise.all(rest)));
  return results;
}

async function completeRacingCancel(setup: RaceSetup, channel: Channel): Promise<void> {
  const protocol = PROTOCOLS[channel];
  const [agentA, agentB] = [protocol.agentOn(setup.apps[0]), protocol.agentOn(setup.apps[1])];
  const racers = await openSessions(setup, channel);
  const complete = (racer: Racer) => () => agentA.complete(racer.sessionId, racer.token);
  const cancel = (racer: Racer) => () => agentB.cancel(racer.sessionId);
  const results = await runPairs(
    racers,
    [
      (racer) => whileHeld(setup.holds, 'before_claim', complete(racer), cancel(racer)),
      (racer) => whileHeld(setup.holds, 'after_claim', complete(racer), cancel(racer)),
    ],
    (racer, i) => race(i, complete(racer), cancel(racer)),
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
  assert.ok(completed > 0 && completed < PAIRS, `both outcomes happened (${completed} completed)`);
  await assertOrdersMatchCharges(setup.fixture, completed);
}

async function completeRacingUpdate(setup: RaceSetup, channel: Channel): Promise<void> {
  const protocol = PROTOCOLS[channel];
  const [agentA, agentB] = [protocol.agentOn(setup.apps[0]), protocol.agentOn(setup.apps[1])];
  const racers = await openSessions(setup, channel);
  const complete = (racer: Racer) => () => agentA.complete(racer.sessionId, racer.token);
  const update = (racer: Racer) => () => agentB.changeItem(racer.sessionId, NEW_ITEM.id);
  const results = await runPairs(
    racers,
    [
      (racer) => whileHeld(setup.holds, 'before_claim', complete(racer), update(racer)),
      (racer) => whileHeld(setup.holds, 'after_claim', complete(racer), update(racer)),
    ],
    (racer, i) => race(i, complete(racer), update(racer)),
  );
  let updatesPaid = 0;
  for (const [i, [completeReply, updateReply]] of results.entries()) {
    const racer = racers[i] as Racer;
    const final = protocol.session(await agentA.get(racer.sessionId));
    assert.equal(final.status, protocol.completed, `pair ${i}: the complete went through`);
    assert.equal(protocol.session(completeReply).total, final.total);
    assert.equal(charged(setup.fixture, racer.token), final.total, `pair ${i}: total shown = amount charged`);
    const updateWon = protocol.updateAccepted(updateReply);
    assert.equal(
      final.total,
      updateWon ? NEW_ITEM.amount : OLD_ITEM.amount,
      `pair ${i}: an update is paid for if and only if it was accepted`,
    );
    if (updateWon) updatesPaid++;
  }
  assert.ok(updatesPaid > 0 && updatesPaid < PAIRS, `both outcomes happened (${updatesPaid} updates paid)`);
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
  const declined = (i: number) => () =>
    agentA.complete((racers[i] as Racer).sessionId, declining[i] as string);
  const good = (racer: Racer) => () => agentB.complete(racer.sessionId, racer.token);
  const results = await runPairs(
    racers,
    [
      // The good token finds the decline settled but not applied: it applies it and pays.
      (racer, i) => whileHeld(setup.holds, 'before_session_settled', declined(i), good(racer)),
      // The good token finds the declined one at the provider: it is told to retry.
      (racer, i) => whileHeld(setup.holds, 'after_charge', declined(i), good(racer)),
    ],
    (racer, i) => race(i, declined(i), good(racer)),
  );
  let completed = 0;
  for (const [i, replies] of results.entries()) {
    const racer = racers[i] as Racer;
    for (const reply of replies) sessionOrError(protocol, reply);
    const [declinedReply, goodReply] = replies;
    if (declinedReply.status === 200) {
      assert.ok(protocol.declined(declinedReply), `pair ${i}: the declined token is told of its decline`);
    }
    const final = protocol.session(await agentA.get(racer.sessionId));
    const amount = charged(setup.fixture, racer.token);
    if (final.status === protocol.completed) {
      assert.equal(amount, final.total, `pair ${i}: the completed session's total is what was charged`);
      if (goodReply.status === 200) {
        assert.equal(
          protocol.session(goodReply).status,
          protocol.completed,
          `pair ${i}: the good token paid`,
        );
      } else {
        // The declined request, finding the good token's attempt claimed and unsettled, finished
        // it while the good request waited on the same charge: that one is told to retry.
        assert.ok(
          RETRY_LATER.has(protocol.errorCode(goodReply)),
          `pair ${i}: the good token is told to retry`,
        );
      }
      completed++;
    } else {
      assert.equal(
        final.status,
        protocol.ready,
        `pair ${i}: declined, the session is ready for another token`,
      );
      assert.equal(amount, 0, `pair ${i}: a session still open was charged ${amount}`);
      protocol.errorCode(goodReply);
    }
  }
  assert.ok(completed > 0 && completed < PAIRS, `both outcomes happened (${completed} completed)`);
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
