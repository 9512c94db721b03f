// db-scope: sqlite

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Stripe from 'stripe';
import {
  type RunningPspSandbox,
  type StartPspSandboxOptions,
  startPspSandbox,
} from '../../src/psp/sandbox/main.ts';

const SECRET_KEY = 'sk_test_events_suite';
const WEBHOOK_SECRET = 'whsec_events_suite';
const verifier = new Stripe(SECRET_KEY);

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly raw: string;
}

interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Statuses to answer with, in turn; the last one repeats. 0 leaves the request unanswered. */
  answers: number[];
}

/** A webhook endpoint on loopback that records what arrives and answers as told. */
async function startReceiver(t: TestContext, answers: number[] = [200]): Promise<Receiver> {
  const receiver: Receiver = { url: '', received: [], answers };
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      receiver.received.push({ headers: request.headers, raw: Buffer.concat(chunks).toString('utf8') });
      const status =
        receiver.answers.length > 1 ? (receiver.answers.shift() ?? 200) : (receiver.answers[0] ?? 200);
      if (status === 0) return;
      response.writeHead(status, status === 302 ? { location: `${receiver.url}/elsewhere` } : {});
      response.end(status < 300 ? '{"received":true}' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/psp/events`,
  });
}

async function startSandbox(t: TestContext, options: StartPspSandboxOptions): Promise<RunningPspSandbox> {
  const sandbox = await startPspSandbox({ secretKey: SECRET_KEY, ...options });
  t.after(() => sandbox.close());
  return sandbox;
}

function stripeAt(sandbox: RunningPspSandbox): Stripe {
  return new Stripe(SECRET_KEY, {
    host: '127.0.0.1',
    port: new URL(sandbox.url).port,
    protocol: 'http',
    maxNetworkRetries: 0,
    telemetry: false,
  });
}

function createSession(stripe: Stripe, expiresAt?: number): Promise<Stripe.Checkout.Session> {
  return stripe.checkout.sessions.create({
    mode: 'payment',
    line_items: [
      {
        quantity: 1,
        price_data: { currency: 'usd', unit_amount: 4900, product_data: { name: 'Team monthly' } },
      },
    ],
    success_url: 'https://svc.test/return?session_id={CHECKOUT_SESSION_ID}',
    cancel_url: 'https://svc.test/billing',
    client_reference_id: 'ws_1',
    ...(expiresAt === undefined ? {} : { expires_at: expiresAt }),
  });
}

async function pay(session: Stripe.Checkout.Session, card = '4242424242424242'): Promise<void> {
  const response = await fetch(`${session.url}`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ email: 'payer@example.com', card_number: card }),
  });
  assert.equal(response.status, 303);
}

async function waitFor(what: string, condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!condition()) {
    if (performance.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function temporaryDataFile(t: TestContext): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'psp-sandbox-events-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'psp-sandbox.sqlite');
}

describe('the PSP sandbox delivers signed events', () => {
  it('sends checkout.session.completed once paid, signed so the SDK verifies it', async (t) => {
    const receiver = await startReceiver(t);
    const sandbox = await startSandbox(t, { webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET } });
    const stripe = stripeAt(sandbox);
    const session = await createSession(stripe);
    await pay(session);
    await sandbox.events.flush();

    assert.equal(receiver.received.length, 1);
    const [delivery] = receiver.received;
    assert.ok(delivery);
    assert.equal(delivery.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(delivery.headers['user-agent'], 'Stripe/1.0 (+https://stripe.com/docs/webhooks)');
    const signature = String(delivery.headers['stripe-signature']);
    assert.match(signature, /^t=\d+,v1=[0-9a-f]{64}$/);
    const event = verifier.webhooks.constructEvent(delivery.raw, signature, WEBHOOK_SECRET);
    assert.equal(event.type, 'checkout.session.completed');
    assert.match(event.id, /^evt_/);
    assert.equal(event.object, 'event');
    assert.equal(event.livemode, false);
    assert.equal(event.pending_webhooks, 1);
    assert.deepEqual(event.request, { id: null, idempotency_key: null });
    const completed = event.data.object as Stripe.Checkout.Session;
    assert.equal(completed.id, session.id);
    assert.equal(completed.status, 'complete');
    assert.equal(completed.payment_status, 'paid');
    assert.equal(completed.client_reference_id, 'ws_1');
    assert.match(String(completed.payment_intent), /^pi_/);

    assert.throws(
      () => verifier.webhooks.constructEvent(delivery.raw, signature, 'whsec_someone_else'),
      Stripe.errors.StripeSignatureVerificationError,
    );
    assert.throws(
      () =>
        verifier.webhooks.constructEvent(delivery.raw.replace('paid', 'unpaid'), signature, WEBHOOK_SECRET),
      Stripe.errors.StripeSignatureVerificationError,
    );

    const [listed] = sandbox.events.list();
    assert.equal(listed?.event.id, event.id);
    assert.equal(listed?.delivery?.status, 'delivered');
    assert.deepEqual(
      listed?.delivery?.attempts.map((attempt) => [attempt.trigger, attempt.status]),
      [['automatic', 200]],
    );
  });

  it('sends checkout.session.expired when a session is expired over the API', async (t) => {
    const receiver = await startReceiver(t);
    const sandbox = await startSandbox(t, { webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET } });
    const session = await createSession(stripeAt(sandbox));
    await stripeAt(sandbox).checkout.sessions.expire(session.id);
    await sandbox.events.flush();
    const [delivery] = receiver.received;
    assert.ok(delivery);
    const event = verifier.webhooks.constructEvent(
      delivery.raw,
      String(delivery.headers['stripe-signature']),
      WEBHOOK_SECRET,
    );
    assert.equal(event.type, 'checkout.session.expired');
    assert.equal((event.data.object as Stripe.Checkout.Session).status, 'expired');
    assert.equal((event.data.object as Stripe.Checkout.Session).url, null);
  });

  it('retries with backoff until the endpoint answers 2xx', async (t) => {
    const receiver = await startReceiver(t, [500, 503, 200]);
    const sandbox = await startSandbox(t, {
      webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET },
      eventRetryDelaysMs: [50, 50, 50],
    });
    await pay(await createSession(stripeAt(sandbox)));
    await waitFor('the third attempt', () => sandbox.events.list()[0]?.delivery?.status === 'delivered');
    assert.equal(receiver.received.length, 3);
    const ids = receiver.received.map((each) => (JSON.parse(each.raw) as { id: string }).id);
    assert.equal(new Set(ids).size, 1);
    assert.deepEqual(
      sandbox.events.list()[0]?.delivery?.attempts.map((attempt) => attempt.status),
      [500, 503, 200],
    );
  });

  it('gives up after the last retry, and a resend still delivers the same event', async (t) => {
    const receiver = await startReceiver(t, [500]);
    const sandbox = await startSandbox(t, {
      webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET },
      eventRetryDelaysMs: [20, 20],
    });
    await pay(await createSession(stripeAt(sandbox)));
    await waitFor('the delivery to fail', () => sandbox.events.list()[0]?.delivery?.status === 'failed');
    assert.equal(receiver.received.length, 3);

    receiver.answers = [200];
    const listed = sandbox.events.list()[0];
    assert.ok(listed);
    const resent = await sandbox.events.resend(listed.event.id);
    assert.equal(receiver.received.length, 4);
    assert.equal(receiver.received[3]?.raw, receiver.received[0]?.raw);
    assert.deepEqual(resent.delivery?.attempts.at(-1)?.status, 200);
    assert.equal(resent.delivery?.attempts.at(-1)?.trigger, 'resend');
    const event = verifier.webhooks.constructEvent(
      String(receiver.received[3]?.raw),
      String(receiver.received[3]?.headers['stripe-signature']),
      WEBHOOK_SECRET,
    );
    assert.equal(event.id, listed.event.id);
  });

  it('follows no redirect: a 3xx answer is a failed attempt and nothing else is contacted', async (t) => {
    const receiver = await startReceiver(t, [302, 200]);
    const sandbox = await startSandbox(t, {
      webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET },
      eventRetryDelaysMs: [30],
    });
    await pay(await createSession(stripeAt(sandbox)));
    await waitFor('the retry', () => sandbox.events.list()[0]?.delivery?.status === 'delivered');
    assert.deepEqual(
      sandbox.events.list()[0]?.delivery?.attempts.map((attempt) => attempt.status),
      [302, 200],
    );
    assert.equal(receiver.received.length, 2);
  });

  it('holds deliveries while paused, so a test can deliver out of order, then resumes', async (t) => {
    const receiver = await startReceiver(t);
    const sandbox = await startSandbox(t, { webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET } });
    const stripe = stripeAt(sandbox);
    sandbox.events.pause();
    const first = await createSession(stripe);
    const second = await createSession(stripe);
    await pay(first);
    await stripe.checkout.sessions.expire(second.id);
    await sandbox.events.flush();
    assert.equal(receiver.received.length, 0);
    const [completed, expired] = sandbox.events.list();
    assert.ok(completed && expired);
    assert.equal(completed.delivery?.status, 'pending');

    await sandbox.events.resend(expired.event.id);
    assert.equal((JSON.parse(String(receiver.received[0]?.raw)) as { id: string }).id, expired.event.id);
    sandbox.events.resume();
    await sandbox.events.flush();
    assert.deepEqual(
      receiver.received.map((each) => (JSON.parse(each.raw) as { type: string }).type),
      ['checkout.session.expired', 'checkout.session.completed'],
    );
    assert.deepEqual(
      sandbox.events.list().map((each) => each.delivery?.status),
      ['delivered', 'delivered'],
    );
  });

  it('offers the same controls over HTTP with the secret key', async (t) => {
    const receiver = await startReceiver(t);
    const sandbox = await startSandbox(t, { webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET } });
    const control = (method: string, route: string, key = SECRET_KEY) =>
      fetch(`${sandbox.url}/_sandbox/events${route}`, {
        method,
        headers: { authorization: `Bearer ${key}` },
      });
    assert.equal((await control('GET', '', 'sk_test_wrong')).status, 401);
    assert.deepEqual(await (await control('POST', '/deliveries/pause')).json(), {
      object: 'sandbox.event_deliveries',
      paused: true,
    });
    await pay(await createSession(stripeAt(sandbox)));
    const listed = (await (await control('GET', '')).json()) as {
      data: { event: { id: string; type: string }; delivery: { status: string } }[];
    };
    assert.equal(listed.data.length, 1);
    assert.equal(listed.data[0]?.event.type, 'checkout.session.completed');
    assert.equal(listed.data[0]?.delivery.status, 'pending');
    const id = String(listed.data[0]?.event.id);

    const resent = await control('POST', `/${id}/resend`);
    assert.equal(resent.status, 200);
    assert.equal(((await resent.json()) as { delivery: { status: string } }).delivery.status, 'delivered');
    assert.equal(receiver.received.length, 1);
    assert.equal((await control('POST', '/evt_unknown/resend')).status, 404);
    assert.deepEqual(await (await control('POST', '/deliveries/resume')).json(), {
      object: 'sandbox.event_deliveries',
      paused: false,
    });
  });

  it('records events without delivering them when no endpoint is configured', async (t) => {
    const sandbox = await startSandbox(t, {});
    await pay(await createSession(stripeAt(sandbox)));
    const [listed] = sandbox.events.list();
    assert.equal(listed?.event.type, 'checkout.session.completed');
    assert.equal(listed?.event.pending_webhooks, 0);
    assert.equal(listed?.delivery, null);
  });
});

describe('Checkout Sessions expire by themselves on the sandbox clock', () => {
  it('emits checkout.session.expired at expires_at, found by the sweep or on read', async (t) => {
    let clock = new Date('2026-11-22T12:00:00Z');
    const receiver = await startReceiver(t);
    const sandbox = await startSandbox(t, {
      now: () => clock,
      webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET },
    });
    const stripe = stripeAt(sandbox);
    const expiresAt = Math.floor(clock.getTime() / 1000) + 1800;
    const swept = await createSession(stripe, expiresAt);
    const read = await createSession(stripe, expiresAt + 60);

    clock = new Date((expiresAt - 1) * 1000);
    await sandbox.events.flush();
    assert.equal(receiver.received.length, 0);
    assert.equal((await stripe.checkout.sessions.retrieve(swept.id)).status, 'open');

    clock = new Date(expiresAt * 1000);
    await waitFor('the sweep to expire the first session', () => receiver.received.length === 1);
    const signature = String(receiver.received[0]?.headers['stripe-signature']);
    const event = verifier.webhooks.constructEvent(
      String(receiver.received[0]?.raw),
      signature,
      WEBHOOK_SECRET,
      undefined,
      undefined,
      clock.getTime(),
    );
    assert.equal(event.type, 'checkout.session.expired');
    assert.equal((event.data.object as Stripe.Checkout.Session).id, swept.id);
    assert.equal(event.created, expiresAt);

    clock = new Date((expiresAt + 60) * 1000);
    assert.equal((await stripe.checkout.sessions.retrieve(read.id)).status, 'expired');
    await sandbox.events.flush();
    assert.deepEqual(
      sandbox.events.list().map((each) => [each.event.type, each.event.data.object.id]),
      [
        ['checkout.session.expired', swept.id],
        ['checkout.session.expired', read.id],
      ],
    );
    const page = await fetch(`${sandbox.url}/pay/${read.id}`);
    assert.match(await page.text(), /This checkout has expired/);
  });
});

describe('event deliveries across a restart and a shutdown', () => {
  it('resumes a pending delivery from the data file after a restart', async (t) => {
    let clock = new Date('2026-11-22T12:00:00Z');
    const dataFile = temporaryDataFile(t);
    const receiver = await startReceiver(t, [500]);
    const options: StartPspSandboxOptions = {
      now: () => clock,
      dataFile,
      webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET },
      eventRetryDelaysMs: [60_000],
    };
    const first = await startPspSandbox({ secretKey: SECRET_KEY, ...options });
    const session = await createSession(stripeAt(first));
    await pay(session);
    await first.events.flush();
    assert.equal(receiver.received.length, 1);
    assert.equal(first.events.list()[0]?.delivery?.status, 'pending');
    await first.close();

    receiver.answers = [200];
    clock = new Date(clock.getTime() + 61_000);
    const second = await startSandbox(t, options);
    await waitFor('the resumed delivery', () => second.events.list()[0]?.delivery?.status === 'delivered');
    assert.equal(receiver.received.length, 2);
    assert.equal(receiver.received[1]?.raw, receiver.received[0]?.raw);
    assert.equal((await stripeAt(second).checkout.sessions.retrieve(session.id)).status, 'complete');
  });

  it('does not hold up close() while the endpoint never answers; the event stays pending', async (t) => {
    const dataFile = temporaryDataFile(t);
    const receiver = await startReceiver(t, [0]);
    const sandbox = await startPspSandbox({
      secretKey: SECRET_KEY,
      dataFile,
      webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET },
    });
    await pay(await createSession(stripeAt(sandbox)));
    await waitFor('the attempt to start', () => receiver.received.length === 1);
    const started = performance.now();
    await sandbox.close();
    assert.ok(performance.now() - started < 3000, 'close() waited too long');

    receiver.answers = [200];
    const again = await startSandbox(t, {
      dataFile,
      webhookEndpoint: { url: receiver.url, secret: WEBHOOK_SECRET },
    });
    await waitFor(
      'the delivery after the restart',
      () => again.events.list()[0]?.delivery?.status === 'delivered',
    );
  });
});
