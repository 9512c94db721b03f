// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { type Channel, createSession, expireSessions } from '../../src/checkout/index.ts';
import { HOUR_MS } from '../../src/shared/clock.ts';
import { testDialect } from '../helpers/database.ts';
import { Holds, whileHeld } from '../helpers/holds.ts';
import { type PurchaseFixture, startPurchaseFixture } from '../helpers/purchase.ts';
import { type Agent, PROTOCOLS, type Protocol } from './agents.ts';

const OLD_ITEM = { id: 'svc-starter-monthly', amount: 9_900 };
const NEW_ITEM = { id: 'svc-enterprise-annual', amount: 1_999_000 };
/** Past the recovery sweep's grace (30 s) and the charging request's lease (90 s). */
const PAST_LEASE_MS = 91_000;

interface Setup {
  fixture: PurchaseFixture;
  holds: Holds;
  protocol: Protocol;
  agent: Agent;
  sessionId: string;
  token: string;
}

async function openSession(t: TestContext, channel: Channel): Promise<Setup> {
  const holds = new Holds();
  const fixture = await startPurchaseFixture(t, { failpoints: holds });
  const created = await createSession(fixture.runtime.checkout, {
    channel,
    itemId: OLD_ITEM.id,
    buyer: { email: 'orderly@example.com' },
  });
  assert.ok(created.ok);
  const protocol = PROTOCOLS[channel];
  return {
    fixture,
    holds,
    protocol,
    agent: protocol.agentOn(fixture.runtime.app),
    sessionId: created.value.id,
    // Valid past the session's hour, for the tests that pay at its very end.
    token: await fixture.mintToken({ expiresInSeconds: 2 * 3600 }),
  };
}

function charged(fixture: PurchaseFixture, token: string): number {
  const granted = fixture.sandbox.state.getGrantedToken(token);
  assert.ok(granted, `the sandbox knows ${token}`);
  return granted.usage_details.amount_captured.value;
}

async function assertPaidOnce({ fixture, protocol, agent, sessionId, token }: Setup, amount: number) {
  const final = protocol.session(await agent.get(sessionId));
  assert.deepEqual([final.status, final.total], [protocol.completed, amount]);
  assert.equal(charged(fixture, token), amount, 'the token paid the total of the session that completed');
  const counts = await fixture.counts();
  assert.deepEqual([counts.succeeded, counts.orders, counts.workspaces], [1, 1, 1]);
}

async function assertNothingCharged({ fixture, token }: Setup) {
  assert.equal(charged(fixture, token), 0);
  const counts = await fixture.counts();
  assert.deepEqual([counts.paymentIntents, counts.orders, counts.workspaces], [0, 0, 0]);
}

/** The error codes each protocol answers with; UCP's update while paying is a 200 (see agents.ts). */
const NOT_MODIFIABLE: Record<Channel, string> = {
  acp: 'session_not_modifiable',
  ucp: 'checkout_not_modifiable',
};
const PAYMENT_IN_PROGRESS: Record<Channel, string> = { acp: 'payment_in_progress', ucp: 'checkout_busy' };

describe(`checkout orderings forced at each step on ${testDialect}`, () => {
  for (const channel of ['acp', 'ucp'] as const) {
    it(`${channel}: a cancel before the claim wins; the complete then finds the session canceled and charges nothing`, async (t) => {
      const setup = await openSession(t, channel);
      const { holds, protocol, agent, sessionId, token } = setup;
      const [completeReply, cancelReply] = await whileHeld(
        holds,
        'before_claim',
        () => agent.complete(sessionId, token),
        () => agent.cancel(sessionId),
      );
      assert.equal(protocol.session(cancelReply).status, protocol.canceled);
      assert.equal(protocol.errorCode(completeReply), NOT_MODIFIABLE[channel]);
      assert.equal(protocol.session(await agent.get(sessionId)).status, protocol.canceled);
      await assertNothingCharged(setup);
    });

    it(`${channel}: a cancel that read the session before the claim but writes after it is refused, and the payment completes`, async (t) => {
      const setup = await openSession(t, channel);
      const { holds, protocol, agent, sessionId, token } = setup;
      const cancelHeld = holds.holdNext('before_session_write');
      const cancelling = agent.cancel(sessionId);
      await cancelHeld.reached;
      const completeHeld = holds.holdNext('after_claim');
      const completing = agent.complete(sessionId, token);
      await completeHeld.reached;
      cancelHeld.release();
      const cancelReply = await cancelling;
      assert.equal(protocol.errorCode(cancelReply), PAYMENT_IN_PROGRESS[channel]);
      completeHeld.release();
      assert.equal(protocol.session(await completing).status, protocol.completed);
      await assertPaidOnce(setup, OLD_ITEM.amount);
    });

    it(`${channel}: a cancel after the claim is refused in the protocol's format, and the payment completes`, async (t) => {
      const setup = await openSession(t, channel);
      const { holds, protocol, agent, sessionId, token } = setup;
      const [completeReply, cancelReply] = await whileHeld(
        holds,
        'after_claim',
        () => agent.complete(sessionId, token),
        async () => {
          const shown = protocol.session(await agent.get(sessionId));
          assert.equal(shown.status, protocol.inProgress, 'a claimed session reads as complete_in_progress');
          return agent.cancel(sessionId);
        },
      );
      assert.equal(protocol.errorCode(cancelReply), PAYMENT_IN_PROGRESS[channel]);
      assert.equal(protocol.session(completeReply).status, protocol.completed);
      await assertPaidOnce(setup, OLD_ITEM.amount);
    });

    it(`${channel}: an update before the claim is what gets paid for`, async (t) => {
      const setup = await openSession(t, channel);
      const { holds, protocol, agent, sessionId, token } = setup;
      const [completeReply, updateReply] = await whileHeld(
        holds,
        'before_claim',
        () => agent.complete(sessionId, token),
        () => agent.changeItem(sessionId, NEW_ITEM.id),
      );
      assert.equal(protocol.updateAccepted(updateReply), true);
      assert.equal(protocol.session(completeReply).total, NEW_ITEM.amount);
      await assertPaidOnce(setup, NEW_ITEM.amount);
    });

    it(`${channel}: an update that read the session before the claim but writes after it is refused; the claimed item is paid for`, async (t) => {
      const setup = await openSession(t, channel);
      const { holds, protocol, agent, sessionId, token } = setup;
      const updateHeld = holds.holdNext('before_session_write');
      const updating = agent.changeItem(sessionId, NEW_ITEM.id);
      await updateHeld.reached;
      const [completeReply, updateReply] = await whileHeld(
        holds,
        'after_claim',
        () => agent.complete(sessionId, token),
        async () => {
          updateHeld.release();
          return updating;
        },
      );
      assert.equal(protocol.updateAccepted(updateReply), false);
      assert.equal(protocol.session(completeReply).total, OLD_ITEM.amount);
      await assertPaidOnce(setup, OLD_ITEM.amount);
    });

    it(`${channel}: an update after the claim is refused; the claimed item is paid for`, async (t) => {
      const setup = await openSession(t, channel);
      const { holds, protocol, agent, sessionId, token } = setup;
      const [completeReply, updateReply] = await whileHeld(
        holds,
        'after_claim',
        () => agent.complete(sessionId, token),
        () => agent.changeItem(sessionId, NEW_ITEM.id),
      );
      assert.equal(protocol.updateAccepted(updateReply), false);
      if (updateReply.status === 200) {
        assert.equal(protocol.session(updateReply).total, OLD_ITEM.amount, 'shown unchanged');
      }
      assert.equal(protocol.session(completeReply).total, OLD_ITEM.amount);
      await assertPaidOnce(setup, OLD_ITEM.amount);
    });

    it(`${channel}: a good token finding another token's decline settled but not applied pays; the declined request answers its own decline`, async (t) => {
      const setup = await openSession(t, channel);
      const { fixture, holds, protocol, agent, sessionId, token } = setup;
      const declining = await fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclined' });
      const [declinedReply, goodReply] = await whileHeld(
        holds,
        'before_session_settled',
        () => agent.complete(sessionId, declining),
        () => agent.complete(sessionId, token),
      );
      assert.equal(protocol.session(goodReply).status, protocol.completed, 'the good token was tried');
      const declined = protocol.session(declinedReply);
      assert.equal(
        declined.status,
        protocol.ready,
        'the late request answers as its decline left the session',
      );
      assert.ok(protocol.declined(declinedReply), 'and says the payment was declined');
      await assertPaidOnce(setup, OLD_ITEM.amount);
    });

    it(`${channel}: a complete held between reading the session and claiming it at the end of the hour finds it expired and charges nothing`, async (t) => {
      const setup = await openSession(t, channel);
      const { fixture, holds, protocol, agent, sessionId, token } = setup;
      fixture.clock.advance(HOUR_MS - 1);
      const [completeReply] = await whileHeld(
        holds,
        'before_claim',
        () => agent.complete(sessionId, token),
        async () => fixture.clock.advance(1),
      );
      assert.equal(protocol.errorCode(completeReply), NOT_MODIFIABLE[channel]);
      await assertNothingCharged(setup);
    });

    it(`${channel}: a session claimed in the last millisecond of its hour does not expire while paying, and completes`, async (t) => {
      const setup = await openSession(t, channel);
      const { fixture, holds, protocol, agent, sessionId, token } = setup;
      fixture.clock.advance(HOUR_MS - 1);
      const [completeReply] = await whileHeld(
        holds,
        'after_claim',
        () => agent.complete(sessionId, token),
        async () => {
          fixture.clock.advance(60_000);
          assert.equal(await expireSessions(fixture.runtime.checkout), 0);
          const shown = await agent.get(sessionId);
          assert.equal(protocol.session(shown).status, protocol.inProgress);
          const expiresAt = Date.parse((shown.body as { expires_at: string }).expires_at);
          assert.ok(
            expiresAt > fixture.clock.now().getTime(),
            'a paying session is not shown past its expiry',
          );
        },
      );
      assert.equal(protocol.session(completeReply).status, protocol.completed);
      await assertPaidOnce(setup, OLD_ITEM.amount);
    });

    it(`${channel}: a crash between the claim and the charge is finished by the recovery sweep, then the settle sweep, charged once`, async (t) => {
      const setup = await openSession(t, channel);
      const { fixture, holds, protocol, agent, sessionId, token } = setup;
      holds.crashNext('after_claim');
      const crashed = await agent.complete(sessionId, token);
      assert.equal(crashed.status, 500);
      assert.equal((await fixture.counts()).paymentIntents, 0, 'the provider was never called');
      assert.equal(protocol.session(await agent.get(sessionId)).status, protocol.inProgress);
      assert.equal(protocol.errorCode(await agent.cancel(sessionId)), PAYMENT_IN_PROGRESS[channel]);

      fixture.clock.advance(PAST_LEASE_MS);
      await fixture.runtime.jobs.runSweeps();
      await assertPaidOnce(setup, OLD_ITEM.amount);
      const rows = await fixture.runtime.database.db
        .selectFrom('checkout_sessions')
        .select('status')
        .execute();
      assert.deepEqual(
        rows.map((row) => row.status),
        ['completed'],
        'the settle sweep wrote the outcome',
      );
    });

    it(`${channel}: sweeps running while a complete is at the provider leave it alone, or finish it once its lease ran out; charged once either way`, async (t) => {
      const setup = await openSession(t, channel);
      const { fixture, holds, protocol, agent, sessionId, token } = setup;
      const [completeReply] = await whileHeld(
        holds,
        'after_charge',
        () => agent.complete(sessionId, token),
        async () => {
          await fixture.runtime.jobs.runSweeps();
          assert.equal(protocol.session(await agent.get(sessionId)).status, protocol.inProgress);
          fixture.clock.advance(PAST_LEASE_MS);
          await fixture.runtime.jobs.runSweeps();
          assert.equal(protocol.session(await agent.get(sessionId)).status, protocol.completed);
        },
      );
      assert.equal(protocol.session(completeReply).status, protocol.completed);
      await assertPaidOnce(setup, OLD_ITEM.amount);
    });
  }
});
