// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { signatureHeader } from '../../src/psp/sandbox/events.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms, getWorkspace } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { WEBHOOK_SECRET } from '../helpers/purchase.ts';
import {
  type BillingScene,
  billingScene,
  buyAndReturn,
  fulfilmentCounts,
  ownerSignsInAgain,
  payOnHostedPage,
  startBuying,
} from './helpers.ts';

const ONCE = { appOrders: 1, terms: 1, purchasedEvents: 1 };
const NOTHING = { appOrders: 0, terms: 0, purchasedEvents: 0 };

describe(`Billing checkout fulfilment on ${testDialect}`, () => {
  it('a workspace on Free is on Pro at once after the completed event, and the return page says so', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture, owner, workspaceId } = scene;
    assert.equal((await getWorkspace(fixture.runtime.database.db, workspaceId))?.plan, 'free');
    const { payUrl, checkoutId } = await startBuying(scene);
    const paid = await payOnHostedPage(payUrl);
    assert.equal(paid.status, 303);
    const back = paid.headers.get('location') ?? '';
    assert.equal(back, `${fixture.baseUrl}/w/${workspaceId}/billing/return?checkout=${checkoutId}`);
    await fixture.sandbox.events.flush();

    const workspace = await getWorkspace(fixture.runtime.database.db, workspaceId);
    assert.equal(workspace?.plan, 'pro');
    assert.equal(workspace?.currentTerm?.startsAt.toISOString(), fixture.clock.now().toISOString());
    assert.equal(workspace?.currentTerm?.endsAt.toISOString(), '2027-04-10T12:00:00.000Z');
    assert.deepEqual(await fulfilmentCounts(scene), ONCE);

    const returned = await owner.get(new URL(back).pathname + new URL(back).search);
    assert.equal(returned.status, 200);
    assert.match(
      returned.body,
      /Paid: the workspace is on Pro until <time datetime="2027-04-10T12:00:00.000Z">/,
    );
    assert.deepEqual(await fulfilmentCounts(scene), ONCE, 'the return page after the event changes nothing');

    const billing = await owner.get(`/w/${workspaceId}/billing`);
    assert.match(billing.body, /<dt>Plan<\/dt><dd>Pro<\/dd>/);
    assert.match(billing.body, /data-label="Channel">App</);
    assert.match(billing.body, /data-label="Channel">ACP</);
    assert.match(billing.body, /\$3,099\.00/);
  });

  it('a purchase on Free is said to start now even when the clock moves on between its reads', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture, owner, workspaceId } = scene;
    const readClock = fixture.clock.now.bind(fixture.clock);
    fixture.clock.now = () => {
      fixture.clock.advance(1);
      return readClock();
    };
    fixture.sandbox.events.pause();
    const { payUrl } = await startBuying(scene);
    const back = new URL((await payOnHostedPage(payUrl)).headers.get('location') ?? '');
    const returned = await owner.get(back.pathname + back.search);
    assert.match(returned.body, /Paid: the workspace is on Pro until/);
    assert.equal((await getWorkspace(fixture.runtime.database.db, workspaceId))?.plan, 'pro');
  });

  it('the return page first, then the event delivered twice and an expiry out of order: one order, one term, one audit event', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture, owner, workspaceId } = scene;
    fixture.sandbox.events.pause();
    const { payUrl, checkoutId } = await startBuying(scene);
    const paid = await payOnHostedPage(payUrl);
    const back = new URL(paid.headers.get('location') ?? '');
    const returned = await owner.get(back.pathname + back.search);
    assert.match(returned.body, /Paid: the workspace is on Pro until/);
    assert.deepEqual(await fulfilmentCounts(scene), ONCE);

    fixture.sandbox.events.resume();
    await fixture.sandbox.events.flush();
    const completed = fixture.sandbox.events
      .list()
      .find((one) => one.event.type === 'checkout.session.completed');
    assert.ok(completed);
    assert.equal(completed.delivery?.attempts.at(-1)?.status, 200);
    await fixture.sandbox.events.resend(completed.event.id);
    assert.deepEqual(await fulfilmentCounts(scene), ONCE, 'a replayed event changes nothing');

    const expiredBody = JSON.stringify({
      ...completed.event,
      id: 'evt_out_of_order',
      type: 'checkout.session.expired',
      data: { object: { ...completed.event.data.object, status: 'expired', payment_status: 'unpaid' } },
    });
    const expired = await postSigned(fixture.baseUrl, expiredBody, fixture.clock.now());
    assert.equal(expired.status, 200);
    const row = await fixture.runtime.database.db
      .selectFrom('billing_checkouts')
      .select('status')
      .where('provider_checkout_id', '=', checkoutId)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'fulfilled', 'an expiry after the payment never un-fulfils');
    assert.equal((await getWorkspace(fixture.runtime.database.db, workspaceId))?.plan, 'pro');
  });

  it('the return page of a checkout already fulfilled answers from our record without asking the provider', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture, owner } = scene;
    const { payUrl } = await startBuying(scene);
    const back = new URL((await payOnHostedPage(payUrl)).headers.get('location') ?? '');
    await fixture.sandbox.events.flush();
    assert.deepEqual(await fulfilmentCounts(scene), ONCE);

    fixture.sandbox.faults.failNext(3, 503);
    const returned = await owner.get(back.pathname + back.search);
    assert.equal(returned.status, 200);
    assert.match(returned.body, /Paid: the workspace is on Pro until/);
    assert.equal(fixture.sandbox.faults.settings().fail_next, 3, 'the provider was not asked');
  });

  it('the event and the return page at the same moment fulfil once', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture, owner } = scene;
    fixture.sandbox.events.pause();
    const { payUrl } = await startBuying(scene);
    const back = new URL((await payOnHostedPage(payUrl)).headers.get('location') ?? '');
    const completed = fixture.sandbox.events
      .list()
      .find((one) => one.event.type === 'checkout.session.completed');
    assert.ok(completed);
    const [returned] = await Promise.all([
      owner.get(back.pathname + back.search),
      fixture.sandbox.events.resend(completed.event.id),
      fixture.sandbox.events.resend(completed.event.id),
    ]);
    assert.match(returned.body, /Paid: the workspace is on Pro until/);
    assert.deepEqual(await fulfilmentCounts(scene), ONCE);
  });

  it('refuses a forged or stale event with 400 and changes nothing', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture } = scene;
    fixture.sandbox.events.pause();
    const { payUrl } = await startBuying(scene);
    await payOnHostedPage(payUrl);
    const completed = fixture.sandbox.events
      .list()
      .find((one) => one.event.type === 'checkout.session.completed');
    assert.ok(completed);
    const body = JSON.stringify(completed.event);

    const forged = await postSigned(fixture.baseUrl, body, fixture.clock.now(), 'whsec_not_the_secret');
    assert.equal(forged.status, 400);
    const unsigned = await fetch(`${fixture.baseUrl}/psp/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.equal(unsigned.status, 400);
    const stale = await postSigned(
      fixture.baseUrl,
      body,
      new Date(fixture.clock.now().getTime() - 10 * 60_000),
    );
    assert.equal(stale.status, 400);
    const tampered = await postSigned(fixture.baseUrl, body, fixture.clock.now(), undefined, (signed) =>
      signed.replace('"amount_total":309900', '"amount_total":100'),
    );
    assert.equal(tampered.status, 400);
    assert.deepEqual(await fulfilmentCounts(scene), NOTHING);
    assert.equal((await getWorkspace(fixture.runtime.database.db, scene.workspaceId))?.plan, 'free');

    const genuine = await postSigned(fixture.baseUrl, body, fixture.clock.now());
    assert.equal(genuine.status, 200);
    assert.deepEqual(await fulfilmentCounts(scene), ONCE);
  });

  it('a completed event whose amount differs from the checkout changes nothing', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture } = scene;
    fixture.sandbox.events.pause();
    const { payUrl } = await startBuying(scene);
    await payOnHostedPage(payUrl);
    const completed = fixture.sandbox.events
      .list()
      .find((one) => one.event.type === 'checkout.session.completed');
    assert.ok(completed);
    const cheaper = JSON.stringify({
      ...completed.event,
      data: { object: { ...completed.event.data.object, amount_total: 100 } },
    });
    const answer = await postSigned(fixture.baseUrl, cheaper, fixture.clock.now());
    assert.equal(answer.status, 200);
    assert.deepEqual(await fulfilmentCounts(scene), NOTHING);
    assert.equal((await getWorkspace(fixture.runtime.database.db, scene.workspaceId))?.plan, 'free');
  });

  it('unknown checkouts and other event types are acknowledged and ignored', async (t) => {
    const scene = await billingScene(t);
    const unknown = JSON.stringify({
      id: 'evt_unknown',
      object: 'event',
      type: 'checkout.session.completed',
      data: {
        object: {
          id: 'cs_test_not_ours',
          object: 'checkout.session',
          status: 'complete',
          payment_status: 'paid',
          amount_total: 309900,
          currency: 'usd',
          metadata: {},
          payment_intent: 'pi_x',
        },
      },
    });
    assert.equal((await postSigned(scene.fixture.baseUrl, unknown, scene.fixture.clock.now())).status, 200);
    const other = JSON.stringify({
      id: 'evt_other',
      object: 'event',
      type: 'charge.refunded',
      data: { object: {} },
    });
    assert.equal((await postSigned(scene.fixture.baseUrl, other, scene.fixture.clock.now())).status, 200);
    assert.deepEqual(await fulfilmentCounts(scene), NOTHING);
  });

  it('a paid workspace gets a next term; the sweep switches to it at the end without a moved-to-Free email', async (t) => {
    const scene = await billingScene(t, { itemId: 'svc-starter-monthly' });
    const { fixture, owner, workspaceId } = scene;
    const db = fixture.runtime.database.db;
    const before = await getWorkspace(db, workspaceId);
    assert.equal(before?.plan, 'starter');
    const currentEnd = before?.currentTerm?.endsAt;
    assert.ok(currentEnd);

    const returned = await buyAndReturn(scene, 'svc-pro-annual');
    assert.match(
      returned.body,
      /Paid: Pro is the next term, from <time datetime="2026-04-01T12:00:00.000Z">/,
    );
    const after = await getWorkspace(db, workspaceId);
    assert.equal(after?.plan, 'starter');
    assert.equal(after?.nextTerms[0]?.plan, 'pro');
    assert.equal(after?.nextTerms[0]?.startsAt.toISOString(), currentEnd.toISOString());
    assert.equal(after?.nextTerms[0]?.endsAt.toISOString(), '2027-04-01T12:00:00.000Z');
    assert.match((await owner.get(`/w/${workspaceId}/billing`)).body, /<dt>Next term<\/dt><dd>Pro, paid:/);
    assert.match((await owner.get(`/w/${workspaceId}`)).body, /<dt>Next term<\/dt><dd>Pro, paid:/);

    fixture.clock.advance(31 * DAY_MS);
    assert.deepEqual(await sweepTerms(fixture), [['starter', 'pro', 0]]);
    const switched = await getWorkspace(db, workspaceId);
    assert.equal(switched?.plan, 'pro');
    assert.equal(switched?.currentTerm?.endsAt.toISOString(), '2027-04-01T12:00:00.000Z');
    assert.deepEqual(switched?.nextTerms, []);
    await fixture.deliverMail();
    assert.equal(
      fixture.smtp.received.filter((mail) => /is now on the Free plan/.test(mail.subject ?? '')).length,
      0,
    );
  });

  it('with two next terms paid, Billing shows each term with its own dates and a third starts when the last ends', async (t) => {
    const scene = await billingScene(t, { itemId: 'svc-starter-monthly' });
    const { fixture, owner, workspaceId } = scene;
    for (const itemId of ['svc-pro-annual', 'svc-starter-monthly']) {
      const { payUrl } = await startBuying(scene, itemId);
      await payOnHostedPage(payUrl);
      await fixture.sandbox.events.flush();
    }
    const returned = await owner.get(
      `/w/${workspaceId}/billing/return?checkout=${
        (
          await fixture.runtime.database.db
            .selectFrom('billing_checkouts')
            .select('provider_checkout_id')
            .where('item_id', '=', 'svc-starter-monthly')
            .executeTakeFirstOrThrow()
        ).provider_checkout_id
      }`,
    );
    assert.match(
      returned.body,
      /Paid: Starter is the next term, from <time datetime="2027-04-01T12:00:00.000Z">.*to <time datetime="2027-05-01T12:00:00.000Z">/,
    );
    const billing = (await owner.get(`/w/${workspaceId}/billing`)).body;
    const nextTerms = [
      ...billing.matchAll(
        /<dt>Next term<\/dt><dd>(\w+), paid: <time datetime="([^"]+)">.*?<time datetime="([^"]+)">/g,
      ),
    ].map((match) => match.slice(1));
    assert.deepEqual(nextTerms, [
      ['Pro', '2026-04-01T12:00:00.000Z', '2027-04-01T12:00:00.000Z'],
      ['Starter', '2027-04-01T12:00:00.000Z', '2027-05-01T12:00:00.000Z'],
    ]);
    assert.match(billing, /starts when the paid term ends, on <time datetime="2027-05-01T12:00:00.000Z">/);
    const overview = (await owner.get(`/w/${workspaceId}`)).body;
    assert.equal([...overview.matchAll(/<dt>Next term<\/dt>/g)].length, 2);
  });

  it('a term bought after the paid term ended but before the sweep ran starts now, and the workspace is on its plan at once', async (t) => {
    const scene = await billingScene(t, { itemId: 'svc-starter-monthly' });
    const { fixture, workspaceId } = scene;
    const db = fixture.runtime.database.db;
    fixture.clock.set('2026-04-05T12:00:00.000Z');
    const owner = await ownerSignsInAgain(fixture);
    scene.owner = owner;
    assert.match((await owner.get(`/w/${workspaceId}/billing`)).body, /A plan bought now starts at once\./);

    const returned = await buyAndReturn(scene, 'svc-pro-annual');
    assert.match(
      returned.body,
      /Paid: the workspace is on Pro until <time datetime="2027-04-05T12:00:00.000Z">/,
    );
    const beforeSweep = await getWorkspace(db, workspaceId);
    assert.equal(beforeSweep?.plan, 'pro');
    assert.equal(beforeSweep?.currentTerm?.plan, 'pro', 'the ended term is not shown as in force');
    assert.deepEqual(beforeSweep?.nextTerms, []);
    assert.doesNotMatch((await owner.get(`/w/${workspaceId}/billing`)).body, /Next term/);

    assert.deepEqual(await sweepTerms(fixture), [['starter', 'pro', 0]]);
    const swept = await getWorkspace(db, workspaceId);
    assert.equal(swept?.plan, 'pro');
    assert.equal(swept?.currentTerm?.startsAt.toISOString(), '2026-04-05T12:00:00.000Z');
    assert.equal(swept?.currentTerm?.endsAt.toISOString(), '2027-04-05T12:00:00.000Z');
    assert.deepEqual(swept?.nextTerms, []);
  });
});

/** Runs the term-end sweep; answers each term it closed as [plan, plan after, owners emailed]. */
async function sweepTerms(fixture: BillingScene['fixture']): Promise<[string, string, number][]> {
  const ended = await endElapsedTerms(fixture.runtime.database.db, {
    clock: fixture.clock,
    baseUrl: fixture.runtime.config.baseUrl,
  });
  return ended.map((term) => [term.plan, term.planNow, term.ownersNotified]);
}

/** Posts a body to the service's event endpoint signed like the provider does (or with another secret). */
async function postSigned(
  baseUrl: string,
  body: string,
  at: Date,
  secret = WEBHOOK_SECRET,
  tamper: (signed: string) => string = (signed) => signed,
): Promise<Response> {
  const header = signatureHeader(body, secret, Math.floor(at.getTime() / 1000));
  return fetch(`${baseUrl}/psp/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': header },
    body: tamper(body),
  });
}
