// db-scope: both

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import type { UcpCheckout } from '../../src/channels/ucp/schemas.ts';
import { HOUR_MS } from '../../src/shared/clock.ts';
import { completeBody, createBody, expectSession, injectingClient } from '../channels/acp-client.ts';
import { testDialect } from '../helpers/database.ts';
import { payingCredential, readResult, startMppFixture } from '../helpers/mpp.ts';
import { type PurchaseFixture, startPurchaseFixture } from '../helpers/purchase.ts';
import { acceptAsNewAccount, type WebResponse, webClient } from '../helpers/web.ts';

const BUYER_EMAIL = 'ada.buyer@example.com';
const MASKED = 'a***@example.com';
const MASKED_PATTERN = 'a\\*\\*\\*@example\\.com';
const UCP_AGENT = 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"';

/** The path and query of a published link, to fetch through the app as a browser would. */
function pathOf(link: string): string {
  const url = new URL(link);
  return `${url.pathname}${url.search}`;
}

async function buyThroughAcp(fixture: PurchaseFixture, email = BUYER_EMAIL): Promise<string> {
  const acp = injectingClient(fixture.runtime.app);
  const session = expectSession(await acp.create(createBody('svc-pro-annual', email)), 201);
  const completed = expectSession(await acp.complete(session.id, completeBody(await fixture.mintToken())));
  assert.equal(completed.status, 'completed');
  assert.deepEqual(
    expectSession(await acp.get(session.id)).order,
    completed.order,
    'the same link on a read',
  );
  return completed.order?.permalink_url ?? '';
}

async function buyThroughUcp(fixture: PurchaseFixture): Promise<string> {
  const send = async (url: string, body: unknown) => {
    const response = await fixture.runtime.app.inject({
      method: 'POST',
      url,
      headers: {
        'ucp-agent': UCP_AGENT,
        'content-type': 'application/json',
        'idempotency-key': randomBytes(8).toString('hex'),
      },
      payload: JSON.stringify(body),
    });
    return response.json() as UcpCheckout;
  };
  const session = await send('/api/ucp/v1/checkout-sessions', {
    line_items: [{ item: { id: 'svc-starter-monthly' }, quantity: 1 }],
    buyer: { email: BUYER_EMAIL },
  });
  const completed = await send(`/api/ucp/v1/checkout-sessions/${session.id}/complete`, {
    payment: {
      instruments: [
        {
          id: 'instr_1',
          handler_id: 'psp_payments',
          type: 'card',
          selected: true,
          credential: { type: 'psp_payment_token', token: await fixture.mintToken() },
        },
      ],
    },
  });
  assert.equal(completed.status, 'completed', JSON.stringify(completed));
  return completed.order?.permalink_url ?? '';
}

function assertOrderPage(page: WebResponse, expected: { plan: string; amount: string; channel: string }) {
  assert.equal(page.status, 200, page.body);
  assert.equal(page.headers['referrer-policy'], 'no-referrer');
  assert.equal(page.headers['x-robots-tag'], 'noindex, nofollow');
  assert.match(page.body, /<meta name="robots" content="noindex, nofollow">/);
  assert.match(page.body, new RegExp(`<h1>${expected.plan} plan, one `));
  assert.match(page.body, new RegExp(`<dd>\\${expected.amount} \\(USD\\)`));
  assert.match(page.body, new RegExp(`through ${expected.channel}</dd>`));
  assert.match(page.body, /<dt>Payment reference<\/dt><dd>pi_\w{3}…\w{4}<\/dd>/);
  assert.match(page.body, /<dt>Workspace<\/dt><dd>Created<\/dd>/);
  // The order's own term, and nothing of what its owners did since (a next term bought in Billing).
  assert.match(page.body, /<dt>Term<\/dt><dd><time [^>]+>[^<]+<\/time> to <time [^>]+>[^<]+<\/time><\/dd>/);
  assert.doesNotMatch(page.body, /Free plan/);
  assert.match(page.body, new RegExp(`Sent to ${MASKED_PATTERN} on `));
  assert.ok(!page.body.includes(BUYER_EMAIL), 'the address never shows in full');
  assert.ok(!page.body.toLowerCase().includes('ada.buyer'), 'nor its local part');
}

function assertNotFound(page: WebResponse, what: string) {
  assert.equal(page.status, 404, what);
  assert.match(page.body, /<meta name="error-code" content="not_found">/, what);
  assert.ok(!page.body.includes(MASKED), what);
}

describe(`the order page on ${testDialect}`, () => {
  it('opens from the permalink of an ACP and a UCP order: what was bought, when, the reference and the invitation', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const acpLink = await buyThroughAcp(fixture);
    assert.match(acpLink, /^http:\/\/svc\.test\/orders\/ord_[^?]+\?key=[A-Za-z0-9_-]{43}$/);
    const client = webClient(fixture.runtime.app);
    const acpPage = await client.get(pathOf(acpLink));
    assertOrderPage(acpPage, { plan: 'Pro', amount: '$3,099.00', channel: 'ACP' });
    assert.match(acpPage.body, /not accepted yet/);
    assert.match(acpPage.body, /<button type="submit" class="button">Send the invitation again<\/button>/);

    const ucpLink = await buyThroughUcp(fixture);
    assert.notEqual(new URL(ucpLink).searchParams.get('key'), new URL(acpLink).searchParams.get('key'));
    assertOrderPage(await client.get(pathOf(ucpLink)), { plan: 'Starter', amount: '$99.00', channel: 'UCP' });
  });

  it('opens from the order_url of the MPP paid answer', async (t) => {
    const fixture = await startMppFixture(t);
    const challenged = await fixture.buy('svc-pro-monthly', { body: { buyer: { email: BUYER_EMAIL } } });
    const authorization = payingCredential(challenged, await fixture.mintToken());
    const paid = await fixture.buy('svc-pro-monthly', {
      authorization,
      body: { buyer: { email: BUYER_EMAIL } },
    });
    assert.equal(paid.status, 200);
    const result = await readResult(paid);
    assert.ok(result.order_url.startsWith(`http://svc.test/orders/${result.order_id}?key=`));
    const page = await webClient(fixture.runtime.app).get(pathOf(result.order_url));
    assertOrderPage(page, { plan: 'Pro', amount: '$299.00', channel: 'MPP' });
  });

  it('answers 404 to an unknown order, a guessed, tampered, missing or borrowed key', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const link = new URL(await buyThroughAcp(fixture));
    const other = new URL(await buyThroughAcp(fixture, 'someone.else@example.com'));
    const orderId = link.pathname.split('/').at(-1) ?? '';
    const key = link.searchParams.get('key') ?? '';
    const tampered = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    const client = webClient(fixture.runtime.app);
    assert.equal((await client.get(pathOf(link.href))).status, 200, 'the real link works');
    const cases: [string, string][] = [
      ['unknown order', `/orders/ord_unknown?key=${key}`],
      ['guessed key', `/orders/${orderId}?key=${randomBytes(32).toString('base64url')}`],
      ['tampered key', `/orders/${orderId}?key=${tampered}`],
      ['missing key', `/orders/${orderId}`],
      ['empty key', `/orders/${orderId}?key=`],
      ['key of another order', `/orders/${orderId}?key=${other.searchParams.get('key')}`],
      ['array of keys', `/orders/${orderId}?key=${key}&key=${key}`],
      ['key as the id', `/orders/${key}`],
    ];
    for (const [what, path] of cases) assertNotFound(await client.get(path), what);
    await client.get(pathOf(link.href));
    assertNotFound(
      await client.post(`/orders/${orderId}/invitation`, { key: tampered }),
      'resend, tampered key',
    );
  });

  it('keeps nothing in the database that opens an order page', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const link = new URL(await buyThroughAcp(fixture));
    const key = link.searchParams.get('key') ?? '';
    assert.equal((await webClient(fixture.runtime.app).get(pathOf(link.href))).status, 200);
    const rows = await fixture.runtime.database.db.selectFrom('orders').selectAll().execute();
    assert.equal(rows.length, 1);
    for (const [column, value] of Object.entries(rows[0] ?? {}))
      assert.ok(!String(value).includes(key), `orders.${column} holds the page key`);
  });

  it('sends the invitation again, a few times an hour at most, and never once it is accepted', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const link = new URL(await buyThroughAcp(fixture));
    const orderId = link.pathname.split('/').at(-1) ?? '';
    const key = link.searchParams.get('key') ?? '';
    await fixture.deliverMail();
    const invitationsSent = () =>
      fixture.smtp.received.filter((mail) => JSON.stringify(mail.to).includes(BUYER_EMAIL)).length;
    assert.equal(invitationsSent(), 1);

    const client = webClient(fixture.runtime.app);
    await client.get(pathOf(link.href));
    const forged = await client.post(`/orders/${orderId}/invitation`, { key, _csrf: 'forged' });
    assert.equal(forged.status, 403, 'the app’s CSRF guard protects the form');

    for (let resend = 1; resend <= 2; resend++) {
      const sent = await client.post(`/orders/${orderId}/invitation`, { key });
      assert.equal(sent.status, 200, sent.body);
      assert.match(sent.body, new RegExp(`A fresh invitation is on its way to ${MASKED_PATTERN}`));
      assert.ok(!sent.body.includes(BUYER_EMAIL));
    }
    const limited = await client.post(`/orders/${orderId}/invitation`, { key });
    assert.equal(limited.status, 429);
    assert.match(limited.body, /<meta name="error-code" content="too_many_requests">/);
    assert.match(limited.body, /Try again in 60 minutes/);
    await fixture.deliverMail();
    assert.equal(invitationsSent(), 3, 'the purchase’s invitation and two resends');
    const resends = await fixture.runtime.database.db
      .selectFrom('audit_events')
      .select('actor_label')
      .where('action', '=', 'invitation.resent')
      .execute();
    assert.deepEqual(
      resends.map((event) => event.actor_label),
      ['Holder of the order page link (ACP order)', 'Holder of the order page link (ACP order)'],
    );

    fixture.clock.advance(HOUR_MS);
    assert.equal((await client.post(`/orders/${orderId}/invitation`, { key })).status, 200, 'an hour later');
    await fixture.deliverMail();
    assert.equal(invitationsSent(), 4);

    const newest = fixture.smtp.received.at(-1)?.text?.match(/\/invitations\/inv_[A-Za-z0-9_-]{43}/)?.[0];
    assert.ok(newest);
    await acceptAsNewAccount(fixture.runtime.app, newest);
    const page = await client.get(pathOf(link.href));
    assert.match(page.body, /: accepted<\/dd>/);
    assert.ok(!page.body.includes('Send the invitation again</button>'));
    const refused = await client.post(`/orders/${orderId}/invitation`, { key });
    assert.equal(refused.status, 409);
    assert.match(refused.body, /The invitation was accepted/);
    await fixture.deliverMail();
    assert.equal(invitationsSent(), 4, 'nothing sent after acceptance');
  });
});
