// db-scope: both

import assert from 'node:assert/strict';
import {
  createHash,
  createHmac,
  createPublicKey,
  generateKeyPairSync,
  type JsonWebKey,
  randomUUID,
} from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it, type TestContext } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { createSigner, createVerifier, httpbis } from 'http-message-signatures';
import { registerPlatform } from '../../src/channels/ucp/index.ts';
import { advanceFollowedOrders } from '../../src/purchase/index.ts';
import { assertAcpOrder } from '../helpers/acp-schema.ts';
import { type PurchaseFixture, startPurchaseFixture } from '../helpers/purchase.ts';
import { assertUcpOrder } from '../helpers/ucp-schema.ts';
import { acceptAsNewAccount } from '../helpers/web.ts';
import { completeBody, createBody, expectSession, injectingClient } from './acp-client.ts';

const HOST = 'svc.test';
const PLATFORM = 'https://platform.example/.well-known/ucp';
const ACP_SECRET = 'acp-order-webhook-secret';
const INVITATION_PATH = /\/invitations\/inv_[A-Za-z0-9_-]{43}/;

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** The agent platform's webhook endpoint: it keeps what arrives and answers 200. */
async function startReceiver(t: TestContext) {
  const received: Received[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({
        path: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received };
}

function platformKey(kid: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig', alg: 'ES256' } };
}
type PlatformKey = ReturnType<typeof platformKey>;

/** A UCP request the platform signs with the independent library (body digest included). */
async function ucp(
  app: FastifyInstance,
  key: PlatformKey,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = { host: HOST, 'ucp-agent': `profile="${PLATFORM}"` };
  const fields = ['@method', '@authority', '@path', 'ucp-agent'];
  if (payload !== undefined) {
    headers['content-type'] = 'application/json';
    headers['idempotency-key'] = randomUUID();
    headers['content-digest'] = `sha-256=:${createHash('sha256').update(payload).digest('base64')}:`;
    fields.push('idempotency-key', 'content-digest', 'content-type');
  }
  const signed = await httpbis.signMessage(
    { key: createSigner(key.privateKey, 'ecdsa-p256-sha256', key.kid), fields, params: ['created', 'keyid'] },
    { method, url: `https://${HOST}${path}`, headers },
  );
  const res = await app.inject({
    method,
    url: path,
    headers: signed.headers as Record<string, string>,
    payload,
  });
  return { status: res.statusCode, body: res.json() };
}

/** Verifies a webhook of ours with the library, against the keys our UCP profile publishes. */
async function verifyUcpWebhook(
  app: FastifyInstance,
  receiverUrl: string,
  webhook: Received,
): Promise<boolean> {
  const profile = (await app.inject({ method: 'GET', url: '/.well-known/ucp' })).json() as {
    keys: JsonWebKey[];
  };
  assert.equal(
    webhook.headers['content-digest'],
    `sha-256=:${createHash('sha256').update(webhook.body).digest('base64')}:`,
  );
  const verified = await httpbis.verifyMessage(
    {
      keyLookup: async (params) => {
        const jwk = profile.keys.find((key) => key.kid === params.keyid);
        return jwk
          ? {
              id: String(jwk.kid),
              algs: ['ecdsa-p256-sha256'],
              verify: createVerifier(createPublicKey({ key: jwk, format: 'jwk' }), 'ecdsa-p256-sha256'),
            }
          : null;
      },
      requiredFields: ['@method', '@authority', '@path', 'ucp-agent', 'content-digest', 'content-type'],
    },
    {
      method: 'POST',
      url: `${receiverUrl}${webhook.path}`,
      headers: webhook.headers as Record<string, string>,
    },
  );
  return verified === true;
}

async function acceptOwnerInvitation(fixture: PurchaseFixture, email: string): Promise<void> {
  await fixture.deliverMail();
  const mail = fixture.smtp.received.filter((message) => JSON.stringify(message.to).includes(email)).at(-1);
  const path = mail?.text?.match(INVITATION_PATH)?.[0];
  assert.ok(path, `no invitation emailed to ${email}`);
  await acceptAsNewAccount(fixture.runtime.app, path);
}

async function startFollowedFixture(t: TestContext) {
  const receiver = await startReceiver(t);
  const fixture = await startPurchaseFixture(t, {
    env: {
      WEBHOOK_ALLOW_LOOPBACK: 'true',
      ACP_ORDER_WEBHOOK_URL: `${receiver.url}/acp/order_events`,
      ACP_ORDER_WEBHOOK_SECRET: ACP_SECRET,
    },
  });
  /** What the sweep and the job runner of a running instance would do meanwhile. */
  const settle = async () => {
    await advanceFollowedOrders(fixture.runtime.database.db, fixture.clock);
    await fixture.runtime.jobs.drain();
  };
  return { fixture, receiver, settle };
}

describe('an agent follows its order', () => {
  it('on UCP: by polling GET /orders/{id} and by signed webhooks, from completed to invitation accepted', async (t) => {
    const { fixture, receiver, settle } = await startFollowedFixture(t);
    const { app, database } = fixture.runtime;
    const key = platformKey('platform-2026');
    await registerPlatform(
      database.db,
      { profileUrl: PLATFORM, keys: [key.jwk], orderWebhookUrl: `${receiver.url}/ucp/orders` },
      new Date(),
    );
    const email = 'ucp.follower@example.com';
    const created = await ucp(app, key, 'POST', '/api/ucp/v1/checkout-sessions', {
      line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: 1 }],
      buyer: { email },
    });
    assert.equal(created.status, 201);
    const token = await fixture.mintToken();
    const completed = await ucp(
      app,
      key,
      'POST',
      `/api/ucp/v1/checkout-sessions/${created.body.id}/complete`,
      {
        payment: {
          instruments: [
            {
              id: 'pi_1',
              handler_id: 'psp_payments',
              type: 'card',
              selected: true,
              credential: { type: 'psp_payment_token', token },
            },
          ],
        },
      },
    );
    assert.equal(completed.body.status, 'completed', JSON.stringify(completed.body));
    const orderId = completed.body.order.id as string;
    const orderPath = `/api/ucp/v1/orders/${orderId}`;

    const placed = await ucp(app, key, 'GET', orderPath);
    assert.equal(placed.status, 200, JSON.stringify(placed.body));
    assertUcpOrder(placed.body);
    assert.equal(placed.body.checkout_id, created.body.id);
    assert.equal(placed.body.permalink_url, completed.body.order.permalink_url);
    assert.equal(placed.body.line_items[0].status, 'processing');
    assert.deepEqual(
      placed.body.fulfillment.events.map((event: { type: string }) => event.type),
      ['workspace_created', 'invitation_sent'],
    );

    const unsigned = await app.inject({
      method: 'GET',
      url: orderPath,
      headers: { 'ucp-agent': `profile="${PLATFORM}"` },
    });
    assert.equal(unsigned.statusCode, 401);
    assert.equal(unsigned.json().messages[0].code, 'unauthorized');
    const other = platformKey('other-2026');
    await registerPlatform(
      database.db,
      { profileUrl: 'https://other.example/.well-known/ucp', keys: [other.jwk] },
      new Date(),
    );
    const otherHeaders = { host: HOST, 'ucp-agent': 'profile="https://other.example/.well-known/ucp"' };
    const signedByOther = await httpbis.signMessage(
      {
        key: createSigner(other.privateKey, 'ecdsa-p256-sha256', other.kid),
        fields: ['@method', '@authority', '@path', 'ucp-agent'],
        params: ['created', 'keyid'],
      },
      { method: 'GET', url: `https://${HOST}${orderPath}`, headers: otherHeaders },
    );
    const foreign = await app.inject({
      method: 'GET',
      url: orderPath,
      headers: signedByOther.headers as Record<string, string>,
    });
    assert.equal(foreign.statusCode, 404, 'another platform does not learn the order exists');

    await settle();
    const first = receiver.received.filter((webhook) => webhook.path === '/ucp/orders');
    assert.equal(first.length, 1);
    const [placedHook] = first;
    assert.ok(placedHook);
    assert.equal(await verifyUcpWebhook(app, receiver.url, placedHook), true);
    assert.match(String(placedHook.headers['webhook-id']), /^evt_/);
    assert.match(String(placedHook.headers['webhook-timestamp']), /^\d+$/);
    const placedDocument = JSON.parse(placedHook.body);
    assertUcpOrder(placedDocument);
    assert.equal(placedDocument.line_items[0].status, 'processing');

    await acceptOwnerInvitation(fixture, email);
    const accepted = await ucp(app, key, 'GET', orderPath);
    assertUcpOrder(accepted.body);
    assert.equal(accepted.body.line_items[0].status, 'fulfilled');
    assert.deepEqual(accepted.body.line_items[0].quantity, { original: 1, total: 1, fulfilled: 1 });
    assert.equal(accepted.body.fulfillment.events.at(-1).type, 'invitation_accepted');

    await settle();
    await settle();
    const hooks = receiver.received.filter((webhook) => webhook.path === '/ucp/orders');
    assert.equal(hooks.length, 2, 'one webhook per state, however often the sweep looks');
    const acceptedHook = hooks[1];
    assert.ok(acceptedHook);
    assert.equal(await verifyUcpWebhook(app, receiver.url, acceptedHook), true);
    const acceptedDocument = JSON.parse(acceptedHook.body);
    assertUcpOrder(acceptedDocument);
    assert.equal(acceptedDocument.line_items[0].status, 'fulfilled');

    const tampered = { ...acceptedHook, body: acceptedHook.body.replace('fulfilled', 'processing') };
    await assert.rejects(verifyUcpWebhook(app, receiver.url, tampered));
  });

  it('on ACP: by reading the session and by HMAC-signed order webhooks, from completed to invitation accepted', async (t) => {
    const { fixture, receiver, settle } = await startFollowedFixture(t);
    const acp = injectingClient(fixture.runtime.app);
    const email = 'acp.follower@example.com';
    const session = expectSession(await acp.create(createBody('svc-starter-monthly', email)), 201);
    const completed = expectSession(await acp.complete(session.id, completeBody(await fixture.mintToken())));
    assert.equal(completed.status, 'completed');
    assertAcpOrder(completed.order);
    assert.equal(completed.order?.status, 'confirmed');

    const read = async () => {
      const order = expectSession(await acp.get(session.id)).order;
      assertAcpOrder(order);
      return order;
    };
    const placed = await read();
    assert.equal(placed?.checkout_session_id, session.id);
    assert.equal(placed?.line_items?.[0]?.status, 'processing');
    assert.equal(placed?.confirmation?.confirmation_email_sent, true);

    const verified = (webhook: Received) => {
      const [, t, v1] =
        /^t=(\d+),v1=([a-f0-9]{64})$/.exec(String(webhook.headers['merchant-signature'])) ?? [];
      return v1 === createHmac('sha256', ACP_SECRET).update(`${t}.${webhook.body}`).digest('hex');
    };
    await settle();
    const [created] = receiver.received.filter((webhook) => webhook.path === '/acp/order_events');
    assert.ok(created);
    assert.ok(verified(created));
    const createdEvent = JSON.parse(created.body);
    assert.equal(createdEvent.type, 'order_create');
    assertAcpOrder(createdEvent.data);
    assert.equal(createdEvent.data.status, 'confirmed');

    await acceptOwnerInvitation(fixture, email);
    const accepted = await read();
    assert.equal(accepted?.status, 'completed');
    assert.equal(accepted?.line_items?.[0]?.status, 'fulfilled');
    assert.equal(accepted?.fulfillments?.[0]?.status, 'delivered');

    await settle();
    const updates = receiver.received.filter((webhook) => webhook.path === '/acp/order_events');
    assert.equal(updates.length, 2);
    const update = updates[1];
    assert.ok(update && verified(update));
    const updateEvent = JSON.parse(update.body);
    assert.equal(updateEvent.type, 'order_update');
    assertAcpOrder(updateEvent.data);
    assert.equal(updateEvent.data.status, 'completed');
  });
});
