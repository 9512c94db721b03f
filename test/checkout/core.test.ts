// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type CheckoutSession,
  cancelSession,
  completeSession,
  createSession,
  expireSessions,
  getSession,
  updateSession,
} from '../../src/checkout/index.ts';
import { crashOnceAt, SimulatedCrash } from '../../src/purchase/index.ts';
import { HOUR_MS } from '../../src/shared/clock.ts';
import type { Result } from '../../src/shared/result.ts';
import { testDialect } from '../helpers/database.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';

function value<E>(result: Result<CheckoutSession, E>): CheckoutSession {
  assert.ok(result.ok, `expected a session, got ${JSON.stringify(!result.ok && result.error)}`);
  return result.value;
}

function errorCode<E extends { code: string }>(result: Result<CheckoutSession, E>): string {
  assert.ok(!result.ok, 'expected an error');
  return result.error.code;
}

describe(`checkout core on ${testDialect}`, () => {
  it('is not ready without a buyer email, becomes ready with one, and prices follow the catalog', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const deps = runtime.checkout;
    const created = value(await createSession(deps, { channel: 'acp', itemId: 'svc-starter-monthly' }));
    assert.equal(created.status, 'not_ready');
    assert.match(created.id, /^cs_[A-Za-z0-9_-]{43}$/);
    assert.equal(created.expiresAt.getTime() - created.createdAt.getTime(), HOUR_MS);
    assert.equal(errorCode(await completeSession(deps, created.id, 'acp', 'spt_x')), 'missing_buyer_email');

    const updated = value(
      await updateSession(deps, created.id, 'acp', {
        itemId: 'svc-pro-annual',
        buyer: { email: 'a@example.com' },
      }),
    );
    assert.deepEqual(
      [updated.status, updated.item.id, updated.item.price.amount],
      ['ready', 'svc-pro-annual', 309900],
    );
    assert.equal(
      errorCode(await updateSession(deps, created.id, 'acp', { itemId: 'svc-msp-monthly' })),
      'not_sellable',
    );
    assert.equal(
      errorCode(await updateSession(deps, created.id, 'acp', { buyer: { email: 'nope' } })),
      'invalid_email',
    );
    assert.equal(value(await updateSession(deps, created.id, 'acp', { buyer: null })).status, 'not_ready');
  });

  it('keeps a session to its channel and stores only the hash of its id', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const session = value(
      await createSession(runtime.checkout, { channel: 'acp', itemId: 'svc-pro-monthly' }),
    );
    assert.equal(errorCode(await getSession(runtime.checkout, session.id, 'ucp')), 'not_found');
    const rows = await runtime.database.db.selectFrom('checkout_sessions').selectAll().execute();
    assert.equal(JSON.stringify(rows).includes(session.id), false);
  });

  it('takes another token after a decline, charges once, and forgets the buyer when completed', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const deps = fixture.runtime.checkout;
    const session = value(
      await createSession(deps, {
        channel: 'ucp',
        itemId: 'svc-pro-monthly',
        buyer: { email: 'a@example.com' },
      }),
    );
    const declined = value(
      await completeSession(
        deps,
        session.id,
        'ucp',
        await fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclined' }),
      ),
    );
    assert.deepEqual([declined.status, declined.paymentError?.code], ['ready', 'generic_decline']);
    const completed = value(await completeSession(deps, session.id, 'ucp', await fixture.mintToken()));
    assert.equal(completed.status, 'completed');
    assert.equal(completed.buyer, null);
    assert.equal(completed.paymentError, null);
    assert.equal(completed.order?.itemId, 'svc-pro-monthly');
    assert.equal(
      errorCode(await completeSession(deps, session.id, 'ucp', await fixture.mintToken())),
      'not_modifiable',
    );
    assert.equal((await fixture.counts()).succeeded, 1);
  });

  it('shows an unpaid session expired after one hour, refuses changes, and the sweep writes the expiry', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const deps = fixture.runtime.checkout;
    const read = value(
      await createSession(deps, {
        channel: 'acp',
        itemId: 'svc-pro-monthly',
        buyer: { email: 'a@example.com' },
      }),
    );
    const swept = value(await createSession(deps, { channel: 'acp', itemId: 'svc-pro-monthly' }));
    fixture.clock.advance(HOUR_MS - 1);
    assert.equal(value(await getSession(deps, read.id, 'acp')).status, 'ready');
    fixture.clock.advance(1);
    assert.equal(value(await getSession(deps, read.id, 'acp')).status, 'expired');
    assert.equal(
      errorCode(await completeSession(deps, read.id, 'acp', await fixture.mintToken())),
      'not_modifiable',
    );
    assert.equal(errorCode(await updateSession(deps, read.id, 'acp', { buyer: null })), 'not_modifiable');
    assert.equal(errorCode(await cancelSession(deps, swept.id, 'acp')), 'not_modifiable');
    assert.equal(await expireSessions(deps), 2, 'reading wrote nothing; the sweep expires both');
    const row = await fixture.runtime.database.db.selectFrom('checkout_sessions').select('status').execute();
    assert.deepEqual(row.map((r) => r.status).sort(), ['expired', 'expired']);
    assert.equal(errorCode(await cancelSession(deps, swept.id, 'acp')), 'not_modifiable');
  });

  it('cancels an open session once', async (t) => {
    const { runtime } = await startPurchaseFixture(t);
    const session = value(
      await createSession(runtime.checkout, { channel: 'acp', itemId: 'svc-pro-monthly' }),
    );
    assert.equal(value(await cancelSession(runtime.checkout, session.id, 'acp')).status, 'canceled');
    assert.equal(errorCode(await cancelSession(runtime.checkout, session.id, 'acp')), 'not_modifiable');
  });

  it('will not start a second payment while the first one is unresolved, and completes it even past the hour', async (t) => {
    const fixture = await startPurchaseFixture(t, { failpoints: crashOnceAt('after_charge') });
    const deps = fixture.runtime.checkout;
    const session = value(
      await createSession(deps, {
        channel: 'acp',
        itemId: 'svc-pro-monthly',
        buyer: { email: 'a@example.com' },
      }),
    );
    await assert.rejects(completeSession(deps, session.id, 'acp', await fixture.mintToken()), SimulatedCrash);
    assert.equal(
      errorCode(await completeSession(deps, session.id, 'acp', await fixture.mintToken())),
      'busy',
    );
    assert.equal(errorCode(await cancelSession(deps, session.id, 'acp')), 'busy');

    fixture.clock.advance(HOUR_MS + 1);
    assert.equal(await expireSessions(deps), 0, 'a session with a payment under way does not expire');
    await fixture.runtime.jobs.runSweeps();
    const after = value(await getSession(deps, session.id, 'acp'));
    assert.equal(after.status, 'completed');
    assert.equal((await fixture.counts()).succeeded, 1);
  });
});
