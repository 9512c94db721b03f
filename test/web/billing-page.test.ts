// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import { billingScene, payOnHostedPage, startBuying } from '../billing/helpers.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture, webClient } from '../helpers/web.ts';

const errorCodeOf = (body: string) => /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];

describe(`the Billing page on ${testDialect}`, () => {
  it('shows owners and admins the plan, term, limits, orders and the six plan terms; members get 403, others 404', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, invitationPath } = await fixture.provision({
      email: 'owner@example.com',
      name: 'Acme',
    });
    const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath);
    const billing = `/w/${workspaceId}/billing`;

    const page = await owner.get(billing);
    assert.equal(page.status, 200);
    assert.match(page.body, /<h1>Acme: Billing<\/h1>/);
    assert.match(page.body, /<dt>Plan<\/dt><dd>Pro<\/dd>/);
    assert.match(page.body, /<time datetime="2027-03-01T12:00:00.000Z">/);
    assert.match(page.body, /does not renew/);
    assert.match(page.body, /When it ends, the workspace moves to the Free plan/);
    assert.match(page.body, /What the Pro plan includes/);
    assert.match(page.body, /Webhook subscriptions<\/td><td role="cell" data-label="Up to">/);
    assert.match(page.body, /starts when the paid term ends, on <time datetime="2027-03-01T12:00:00.000Z">/);
    const items = [...page.body.matchAll(/name="item" value="([a-z-]+)"/g)].map((match) => match[1]);
    assert.deepEqual(items, [
      'svc-starter-monthly',
      'svc-starter-annual',
      'svc-pro-monthly',
      'svc-pro-annual',
      'svc-enterprise-monthly',
      'svc-enterprise-annual',
    ]);
    assert.match(page.body, /\$3,099\.00/);
    assert.match(page.body, /No orders yet\./);

    const unknown = await owner.post(`${billing}/checkout`, { item: 'svc-msp-annual' });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body, /Choose one of the plans listed below\./);

    for (const [email, role] of [
      ['admin@example.com', 'admin'],
      ['member@example.com', 'member'],
    ] as const) {
      await owner.get(`/w/${workspaceId}/members`);
      const sent = await owner.post(`/w/${workspaceId}/members/invitations`, { email, role });
      assert.equal(sent.status, 303, sent.body);
    }
    const admin = await acceptAsNewAccount(
      fixture.runtime.app,
      await fixture.latestInvitationPath('admin@example.com'),
    );
    const member = await acceptAsNewAccount(
      fixture.runtime.app,
      await fixture.latestInvitationPath('member@example.com'),
    );
    assert.equal((await admin.get(billing)).status, 200);
    const refused = await member.get(billing);
    assert.equal(refused.status, 403);
    assert.ok(errorCodeOf(refused.body));
    await member.get(`/w/${workspaceId}`);
    assert.equal((await member.post(`${billing}/checkout`, { item: 'svc-pro-annual' })).status, 403);
    assert.equal((await member.get(`${billing}/return?checkout=cs_test_x`)).status, 403);
    const other = await fixture.provision({ email: 'other@example.com' });
    assert.equal((await owner.get(`/w/${other.workspaceId}/billing`)).status, 404);
    const anonymous = await webClient(fixture.runtime.app).get(billing);
    assert.equal(anonymous.status, 303);

    fixture.runtime.clock.advance(366 * DAY_MS);
    await endElapsedTerms(fixture.runtime.database.db, {
      clock: fixture.runtime.clock,
      baseUrl: fixture.runtime.config.baseUrl,
    });
    const again = webClient(fixture.runtime.app);
    await again.get('/sign-in');
    await again.post('/sign-in', { email: 'owner@example.com', password: 'correct horse battery staple' });
    const free = await again.get(billing);
    assert.match(free.body, /<dt>Plan<\/dt><dd>Free<\/dd>/);
    assert.match(free.body, /on the Free plan, with no paid term/);
    assert.match(free.body, /A plan bought now starts at once\./);
  });

  it('lets the Buy form lead to the provider and answers the return page only for this workspace’s checkouts', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture, owner, workspaceId } = scene;
    const page = await owner.get(`/w/${workspaceId}/billing`);
    assert.match(
      String(page.headers['content-security-policy']),
      new RegExp(`form-action 'self' ${fixture.sandbox.url.replace(/[.]/g, '\\.')};`),
    );
    fixture.sandbox.events.pause();
    const { payUrl, checkoutId } = await startBuying(scene);

    const open = await owner.get(`/w/${workspaceId}/billing/return?checkout=${checkoutId}`);
    assert.equal(open.status, 200);
    assert.match(open.body, /Not paid: the payment is not complete; nothing was charged\./);
    assert.match(open.body, new RegExp(`href="/w/${workspaceId}/billing">Back to Billing`));

    assert.equal((await owner.get(`/w/${workspaceId}/billing/return?checkout=cs_test_unknown`)).status, 404);
    assert.equal((await owner.get(`/w/${workspaceId}/billing/return`)).status, 404);
    const elsewhere = await fixture.buyWorkspace('owner@example.com', 'svc-starter-monthly');
    const invitation = new URL(elsewhere.invitationUrl).pathname;
    await owner.get(invitation);
    assert.equal((await owner.post(`${invitation}/accept`, {})).status, 303);
    assert.equal((await owner.get(`/w/${elsewhere.workspaceId}/billing`)).status, 200);
    const otherReturn = await owner.get(`/w/${elsewhere.workspaceId}/billing/return?checkout=${checkoutId}`);
    assert.equal(otherReturn.status, 404, 'the checkout is another workspace’s');

    await payOnHostedPage(payUrl);
    const paid = await owner.get(`/w/${workspaceId}/billing/return?checkout=${checkoutId}`);
    assert.match(paid.body, /Paid: the workspace is on Pro until/);
  });

  it('tells a provider that is down (try again) from one that refuses, and a checkout it does not know or expired, without internals', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture, owner, workspaceId } = scene;
    const billing = `/w/${workspaceId}/billing`;
    const internals =
      /Injected failure|api_error|sk_test_|Stripe[A-Za-z]*Error|ProviderUnavailable|node_modules/;
    await owner.get(billing);

    fixture.sandbox.faults.failNext(3, 503); // the first try and both SDK retries
    const down = await owner.post(`${billing}/checkout`, { item: 'svc-pro-annual' });
    assert.equal(down.status, 503);
    assert.equal(errorCodeOf(down.body), 'provider_unavailable');
    assert.match(down.body, /could not be reached; nothing was charged\. Try again in a moment\./);
    assert.doesNotMatch(down.body, internals);

    fixture.sandbox.faults.failNext(1, 401);
    const refused = await owner.post(`${billing}/checkout`, { item: 'svc-pro-annual' });
    assert.equal(refused.status, 502);
    assert.equal(errorCodeOf(refused.body), 'provider_refused');
    assert.match(refused.body, /refused to start this payment; nothing was charged\./);
    assert.doesNotMatch(refused.body, internals);

    const { checkoutId } = await startBuying(scene);
    fixture.sandbox.faults.failNext(3, 503);
    const unconfirmed = await owner.get(`${billing}/return?checkout=${checkoutId}`);
    assert.equal(unconfirmed.status, 503);
    assert.equal(errorCodeOf(unconfirmed.body), 'provider_unavailable');
    assert.match(unconfirmed.body, /could not be reached to confirm this payment/);
    assert.match(unconfirmed.body, /Reload this page in a moment\./);
    assert.doesNotMatch(unconfirmed.body, internals);

    // A provider refusing our own request (a revoked key) is our fault, not the visitor's.
    fixture.sandbox.faults.failNext(1, 401);
    const ours = await owner.get(`${billing}/return?checkout=${checkoutId}`);
    assert.equal(ours.status, 500);
    assert.doesNotMatch(ours.body, internals);

    // A checkout of ours the provider has no record of (its data lost, or another account's).
    const db = fixture.runtime.database.db;
    const row = await db
      .selectFrom('billing_checkouts')
      .selectAll()
      .where('provider_checkout_id', '=', checkoutId)
      .executeTakeFirstOrThrow();
    await db
      .insertInto('billing_checkouts')
      .values({ ...row, id: `${row.id}x`, provider_checkout_id: 'cs_test_lost_at_the_provider' })
      .execute();
    const unknown = await owner.get(`${billing}/return?checkout=cs_test_lost_at_the_provider`);
    assert.equal(unknown.status, 404);
    assert.equal(errorCodeOf(unknown.body), 'checkout_not_found');
    assert.match(unknown.body, /The payment provider has no record of this payment; nothing was charged\./);
    assert.doesNotMatch(unknown.body, internals);

    await startBuying(scene, 'svc-starter-monthly');
    const expired = await owner.get(`${billing}/return?checkout=${checkoutId}`);
    assert.equal(expired.status, 200);
    assert.match(
      expired.body,
      /Not paid: this payment expired before it was completed; nothing was charged\./,
    );
  });

  it('choosing again when the provider fails to end the earlier checkout still leads to the provider, and the next choice ends it', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture } = scene;
    const first = await startBuying(scene, 'svc-pro-annual');
    // The first try and both SDK retries.
    fixture.sandbox.faults.failNext(3, 500, `/v1/checkout/sessions/${first.checkoutId}/expire`);
    const second = await startBuying(scene, 'svc-starter-monthly');
    assert.equal(fixture.sandbox.faults.settings().fail_next, 0);
    assert.equal(fixture.sandbox.state.checkoutSessionRecord(first.checkoutId)?.session.status, 'open');

    await startBuying(scene, 'svc-starter-annual');
    assert.equal(fixture.sandbox.state.checkoutSessionRecord(first.checkoutId)?.session.status, 'expired');
    assert.equal(fixture.sandbox.state.checkoutSessionRecord(second.checkoutId)?.session.status, 'expired');
  });

  it('choosing in two tabs at once leaves one checkout open: the other page refuses payment, so one term is bought', async (t) => {
    const scene = await billingScene(t, { termEnded: true });
    const { fixture } = scene;
    for (let round = 0; round < 3; round++) {
      const [a, b] = await Promise.all([
        startBuying(scene, 'svc-pro-annual'),
        startBuying(scene, 'svc-starter-monthly'),
      ]);
      const statuses = [a, b].map(
        ({ checkoutId }) => fixture.sandbox.state.checkoutSessionRecord(checkoutId)?.session.status,
      );
      assert.deepEqual(statuses.sort(), ['expired', 'open'], `round ${round}`);
    }
    const open = await fixture.runtime.database.db
      .selectFrom('billing_checkouts')
      .select('id')
      .where('workspace_id', '=', scene.workspaceId)
      .where('status', '=', 'open')
      .execute();
    assert.equal(open.length, 1);
  });
});
