// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { testDialect } from '../helpers/database.ts';
import { startPurchaseFixture } from '../helpers/purchase.ts';
import { startTestRuntime } from '../helpers/runtime.ts';
import { type UcpRelease, ucpSchemas } from '../helpers/ucp-schema.ts';

const SESSIONS = '/api/ucp/v1/checkout-sessions';
const agent = (version: string) => `profile="https://agent.example/.well-known/ucp"; version="${version}"`;

interface Sent {
  status: number;
  body: {
    ucp: { version: string; status?: string };
    id?: string;
    status?: string;
    messages?: { code: string }[];
  };
}

function sender(app: FastifyInstance, release: string) {
  return async (method: 'GET' | 'POST' | 'PUT', url: string, body?: unknown): Promise<Sent> => {
    const res = await app.inject({
      method,
      url,
      headers: {
        'ucp-agent': agent(release),
        ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
    return { status: res.statusCode, body: res.json() };
  };
}

const createBody = (email?: string) => ({
  line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: 1 }],
  ...(email ? { buyer: { email } } : {}),
});

function completeBody(token: string, binding?: Record<string, string>) {
  return {
    payment: {
      instruments: [
        {
          id: 'instr_1',
          handler_id: 'psp_payments',
          type: 'card',
          selected: true,
          credential: { type: 'psp_payment_token', token, ...(binding ? { binding } : {}) },
        },
      ],
    },
  };
}

describe(`UCP releases on ${testDialect}`, () => {
  for (const release of ['2026-08-25', '2026-04-08'] as const satisfies UcpRelease[]) {
    it(`speaks ${release} to an agent that asks for it, every answer valid against that release's schemas`, async (t) => {
      const fixture = await startPurchaseFixture(t);
      const send = sender(fixture.runtime.app, release);
      const schemas = ucpSchemas(release);
      const checkout = (answer: Sent, status = 200) => {
        assert.equal(answer.status, status, JSON.stringify(answer.body));
        schemas.checkout(answer.body);
        assert.equal(answer.body.ucp.version, release);
        return answer.body;
      };
      const error = (answer: Sent, status: number, code: string) => {
        assert.equal(answer.status, status, JSON.stringify(answer.body));
        schemas.errorResponse(answer.body);
        assert.deepEqual(answer.body.ucp, { version: release, status: 'error' });
        assert.equal(answer.body.messages?.[0]?.code, code);
      };

      const created = checkout(await send('POST', SESSIONS, createBody()), 201);
      assert.equal(created.status, 'incomplete');
      const id = String(created.id);
      checkout(await send('PUT', `${SESSIONS}/${id}`, createBody('a@example.com')));
      checkout(await send('GET', `${SESSIONS}/${id}`));
      const completed = checkout(
        await send('POST', `${SESSIONS}/${id}/complete`, completeBody(await fixture.mintToken())),
      );
      assert.equal(completed.status, 'completed');
      error(await send('POST', `${SESSIONS}/${id}/cancel`), 409, 'checkout_not_modifiable');
      error(await send('GET', `${SESSIONS}/cs_unknown`), 404, 'not_found');
      const canceled = checkout(await send('POST', SESSIONS, createBody()), 201);
      assert.equal(checkout(await send('POST', `${SESSIONS}/${canceled.id}/cancel`)).status, 'canceled');
    });
  }

  it('refuses a release it does not speak, naming the ones it does', async (t) => {
    const runtime = await startTestRuntime(t);
    const answer = await sender(runtime.app, '2026-01-23')('GET', `${SESSIONS}/cs_x`);
    assert.equal(answer.status, 422);
    ucpSchemas('2026-08-25').errorResponse(answer.body);
    assert.equal(answer.body.messages?.[0]?.code, 'version_unsupported');
    assert.match(JSON.stringify(answer.body), /2026-08-25 and 2026-04-08/);
  });

  it('takes a token bound to this checkout in either release shape and refuses one bound to another', async (t) => {
    const fixture = await startPurchaseFixture(t);
    const current = sender(fixture.runtime.app, '2026-08-25');
    const older = sender(fixture.runtime.app, '2026-04-08');
    const first = (await current('POST', SESSIONS, createBody('a@example.com'))).body;
    const second = (await older('POST', SESSIONS, createBody('b@example.com'))).body;

    const refused = await current(
      'POST',
      `${SESSIONS}/${first.id}/complete`,
      completeBody(await fixture.mintToken(), { type: 'dev.ucp.shopping.checkout', id: String(second.id) }),
    );
    assert.equal(refused.status, 400);
    ucpSchemas('2026-08-25').errorResponse(refused.body);
    assert.equal(refused.body.messages?.[0]?.code, 'invalid');
    const refusedOld = await older(
      'POST',
      `${SESSIONS}/${second.id}/complete`,
      completeBody(await fixture.mintToken(), { checkout_id: String(first.id) }),
    );
    assert.equal(refusedOld.status, 400);
    assert.equal(fixture.sandbox.state.listPaymentIntents().length, 0, 'a refused binding charges nothing');

    const paid = await current(
      'POST',
      `${SESSIONS}/${first.id}/complete`,
      completeBody(await fixture.mintToken(), { type: 'dev.ucp.shopping.checkout', id: String(first.id) }),
    );
    assert.equal(paid.body.status, 'completed', JSON.stringify(paid.body));
    const paidOld = await older(
      'POST',
      `${SESSIONS}/${second.id}/complete`,
      completeBody(await fixture.mintToken(), { checkout_id: String(second.id) }),
    );
    assert.equal(paidOld.body.status, 'completed', JSON.stringify(paidOld.body));
  });

  it('lists the older release in the profile and serves its leaf profile, both valid and cacheable', async (t) => {
    const runtime = await startTestRuntime(t, { env: { BASE_URL: 'https://svc.example' } });
    const current = await runtime.app.inject({ method: 'GET', url: '/.well-known/ucp' });
    const profile = current.json();
    ucpSchemas('2026-08-25').businessProfile(profile);
    assert.deepEqual(profile.ucp.supported_versions, {
      '2026-04-08': 'https://svc.example/.well-known/ucp/2026-04-08',
    });

    const leaf = await runtime.app.inject({ method: 'GET', url: '/.well-known/ucp/2026-04-08' });
    assert.equal(leaf.statusCode, 200);
    assert.equal(leaf.headers['cache-control'], 'public, max-age=3600');
    const older = leaf.json();
    ucpSchemas('2026-04-08').businessProfile(older);
    assert.equal(older.ucp.version, '2026-04-08');
    assert.equal(older.ucp.supported_versions, undefined, 'a leaf profile lists no other versions');
    assert.equal(
      older.ucp.capabilities['dev.ucp.shopping.checkout'][0].schema,
      'https://ucp.dev/2026-04-08/schemas/shopping/checkout.json',
    );
    assert.equal(older.ucp.payment_handlers['com.psp.payments'][0].version, '2026-04-08');
    const cached = await runtime.app.inject({
      method: 'GET',
      url: '/.well-known/ucp/2026-04-08',
      headers: { 'if-none-match': String(leaf.headers.etag) },
    });
    assert.equal(cached.statusCode, 304);
  });

  it('validates against the 2026-08-25 release, where the payment schemas live under common/', () => {
    const release = ucpSchemas('2026-08-25');
    for (const moved of [
      'common/types/payment.json',
      'common/types/payment_instrument.json',
      'common/types/token_credential.json',
      'common/types/binding.json',
      'common/payment_ap2_mandate.json',
    ]) {
      assert.ok(release.has(moved), moved);
    }
    assert.equal(release.has('shopping/payment.json'), false);
    assert.ok(ucpSchemas('2026-04-08').has('shopping/payment.json'));
  });
});
