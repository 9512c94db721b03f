// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { createOrganizationIn } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { payingCredential, startMppFixture } from '../helpers/mpp.ts';

const NUL = 'x\u0000y';
const LONE_SURROGATE = 'spt_x\ud800';
const DEEP = `${'['.repeat(5000)}${']'.repeat(5000)}`;

type Surface = 'acp' | 'ucp' | 'problem';

interface Answer {
  status: number;
  type: string;
  // biome-ignore lint/suspicious/noExplicitAny: error bodies of three formats
  body: any;
}

/** The stable error code of an answer in the format of its surface. */
function codeIn(surface: Surface, answer: Answer): string {
  switch (surface) {
    case 'acp':
      assert.equal(answer.body.type, 'invalid_request', JSON.stringify(answer.body));
      return answer.body.code;
    case 'ucp':
      assert.equal(answer.body.ucp?.status, 'error', JSON.stringify(answer.body));
      return answer.body.messages[0].code;
    case 'problem':
      assert.match(answer.type, /^application\/problem\+json/);
      return answer.body.code;
  }
}

describe(`hostile checkout input on ${testDialect}: a 4xx in the surface's own format, never a 500`, () => {
  it('refuses NUL and unpaired surrogates in stored text and tokens, numbers past double range and deep nesting', async (t) => {
    const fixture = await startMppFixture(t);
    const send = async (
      method: string,
      path: string,
      body?: string,
      headers: Record<string, string> = {},
    ) => {
      const response = await fetch(`${fixture.url}${path}`, {
        method,
        headers: {
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
          'ucp-agent': 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"',
          ...headers,
        },
        body,
      });
      const text = await response.text();
      return {
        status: response.status,
        type: response.headers.get('content-type') ?? '',
        body: text ? JSON.parse(text) : undefined,
      };
    };
    const json = JSON.stringify;
    const acpCreate = (buyer: object) =>
      json({ line_items: [{ id: 'svc-pro-monthly' }], currency: 'usd', buyer });
    const ucpCreate = (buyer: object) =>
      json({ line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: 1 }], buyer });
    const acpSession = (
      await send('POST', '/api/acp/checkout_sessions', acpCreate({ email: 'a@example.com' }))
    ).body.id;
    const ucpSession = (
      await send('POST', '/api/ucp/v1/checkout-sessions', ucpCreate({ email: 'a@example.com' }))
    ).body.id;
    const acpComplete = (token: string) =>
      json({
        payment_data: {
          handler_id: 'psp_spt',
          instrument: { type: 'card', credential: { type: 'spt', token } },
        },
      });
    const ucpComplete = (token: string) =>
      json({
        payment: {
          instruments: [
            {
              id: 'card-1',
              handler_id: 'psp_payments',
              type: 'card',
              selected: true,
              credential: { type: 'psp_payment_token', token },
            },
          ],
        },
      });

    const cases: [string, Surface, string, string, string, number, string][] = [
      [
        'ACP buyer name',
        'acp',
        'POST',
        '/api/acp/checkout_sessions',
        acpCreate({ email: 'a@example.com', first_name: NUL }),
        400,
        'invalid',
      ],
      [
        'ACP company',
        'acp',
        'POST',
        '/api/acp/checkout_sessions',
        acpCreate({ email: 'a@example.com', company: { name: NUL } }),
        400,
        'invalid',
      ],
      [
        'ACP token NUL',
        'acp',
        'POST',
        `/api/acp/checkout_sessions/${acpSession}/complete`,
        acpComplete(`spt_${NUL}`),
        400,
        'invalid',
      ],
      [
        'ACP token surrogate',
        'acp',
        'POST',
        `/api/acp/checkout_sessions/${acpSession}/complete`,
        acpComplete(LONE_SURROGATE),
        400,
        'invalid',
      ],
      [
        'ACP 1e400',
        'acp',
        'POST',
        '/api/acp/checkout_sessions',
        '{"line_items":[{"id":"svc-pro-monthly"}],"currency":"usd","x":1e400}',
        400,
        'invalid_json',
      ],
      [
        'ACP deep',
        'acp',
        'POST',
        '/api/acp/checkout_sessions',
        `{"line_items":[{"id":"svc-pro-monthly"}],"currency":"usd","x":${DEEP}}`,
        400,
        'invalid_json',
      ],
      [
        'UCP email NUL',
        'ucp',
        'POST',
        '/api/ucp/v1/checkout-sessions',
        ucpCreate({ email: `a${NUL}@example.com` }),
        400,
        'invalid',
      ],
      [
        'UCP name',
        'ucp',
        'PUT',
        `/api/ucp/v1/checkout-sessions/${ucpSession}`,
        ucpCreate({ email: 'a@example.com', last_name: NUL }),
        400,
        'invalid',
      ],
      [
        'UCP token NUL',
        'ucp',
        'POST',
        `/api/ucp/v1/checkout-sessions/${ucpSession}/complete`,
        ucpComplete(`spt_${NUL}`),
        400,
        'invalid',
      ],
      [
        'UCP token surrogate',
        'ucp',
        'POST',
        `/api/ucp/v1/checkout-sessions/${ucpSession}/complete`,
        ucpComplete(LONE_SURROGATE),
        400,
        'invalid',
      ],
      [
        'UCP 1e400',
        'ucp',
        'POST',
        `/api/ucp/v1/checkout-sessions/${ucpSession}/cancel`,
        '{"x":-1e400}',
        400,
        'invalid_json',
      ],
      [
        'MPP buyer name',
        'problem',
        'POST',
        '/api/mpp/plans/svc-pro-monthly',
        json({ buyer: { email: 'a@example.com', full_name: NUL } }),
        400,
        'invalid_request',
      ],
      [
        'MPP deep',
        'problem',
        'POST',
        '/api/mpp/plans/svc-pro-monthly',
        `{"buyer":{"email":"a@example.com","x":${DEEP}}}`,
        400,
        'invalid_json',
      ],
    ];
    for (const [name, surface, method, path, body, status, code] of cases) {
      const answer = await send(method, path, body);
      assert.equal(answer.status, status, `${name}: ${JSON.stringify(answer.body)}`);
      assert.equal(codeIn(surface, answer), code, name);
    }
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 0,
      succeeded: 0,
      orders: 0,
      workspaces: 0,
      emails: 0,
    });
  });

  it('answers finite but awkward numbers (1e308, -0, 1e-400, 30-digit integers) on every surface without a 500', async (t) => {
    const fixture = await startMppFixture(t);
    const org = await createOrganizationIn(fixture.runtime);
    const send = async (path: string, body: string, headers: Record<string, string> = {}) => {
      const response = await fetch(`${fixture.url}${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': randomUUID(),
          'ucp-agent': 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"',
          ...headers,
        },
        body,
      });
      await response.body?.cancel();
      return response.status;
    };
    const bearer = { authorization: `Bearer ${org.key}` };
    for (const number of [
      '1e308',
      '-1.7976931348623157e308',
      '-0',
      '1e-400',
      '5e-324',
      '123456789012345678901234567890',
    ]) {
      const cases: [string, string, number, Record<string, string>?][] = [
        // a number where the schema wants 1: refused; in a member nobody reads: ignored
        [
          '/api/acp/checkout_sessions',
          `{"line_items":[{"id":"svc-pro-monthly","quantity":${number}}],"currency":"usd"}`,
          400,
        ],
        [
          '/api/acp/checkout_sessions',
          `{"line_items":[{"id":"svc-pro-monthly"}],"currency":"usd","x":${number}}`,
          201,
        ],
        [
          '/api/ucp/v1/checkout-sessions',
          `{"line_items":[{"item":{"id":"svc-pro-monthly"},"quantity":${number}}]}`,
          400,
        ],
        [
          '/api/ucp/v1/checkout-sessions',
          `{"line_items":[{"item":{"id":"svc-pro-monthly"},"quantity":1}],"x":${number}}`,
          201,
        ],
        ['/api/mpp/plans/svc-pro-monthly', `{"buyer":{"email":"a@example.com","company":${number}}}`, 400],
        ['/api/mpp/plans/svc-pro-monthly', `{"buyer":{"email":"a@example.com"},"x":${number}}`, 402],
        ['/api/v1/risks', `{"title":"Loss","likelihood":${number},"impact":3}`, 400, bearer],
        [
          '/api/v1/hooks',
          `{"url":"https://127.0.0.1/","event_types":["task.created"],"x":${number}}`,
          400,
          bearer,
        ],
      ];
      for (const [path, body, status, headers] of cases)
        assert.equal(await send(path, body, headers), status, `${path} ${body}`);
    }
    assert.equal((await fixture.counts()).paymentIntents, 0);
  });

  it('refuses a broken MPP token without using up the challenge, which a good token then pays', async (t) => {
    const fixture = await startMppFixture(t);
    const challenged = await fixture.buy('svc-pro-monthly');
    assert.equal(challenged.status, 402);
    for (const spt of [`spt_${NUL}`, LONE_SURROGATE]) {
      const refused = await fixture.buy('svc-pro-monthly', {
        authorization: payingCredential(challenged, spt),
      });
      assert.equal(refused.status, 402, spt);
      assert.match(refused.headers.get('content-type') ?? '', /^application\/problem\+json/);
    }
    const token = await fixture.mintToken({ maxAmount: 29900 });
    const paid = await fixture.buy('svc-pro-monthly', { authorization: payingCredential(challenged, token) });
    assert.equal(paid.status, 200, await paid.clone().text());
    assert.equal((await fixture.counts()).succeeded, 1);
  });

  it('answers URLs the router cannot take in the format of the surface they were meant for', async (t) => {
    const fixture = await startMppFixture(t);
    const cases: [Surface, string, number, string][] = [
      ['acp', '/api/acp/checkout_sessions/cs_%FF', 400, 'invalid_request'],
      ['ucp', '/api/ucp/v1/checkout-sessions/%ED%A0%80', 400, 'invalid_url'],
      ['problem', '/api/v1/tasks/%C0%80', 400, 'invalid_url'],
      ['acp', `/api/acp/checkout_sessions/cs_${'a'.repeat(300)}`, 414, 'invalid_request'],
      ['ucp', `/api/ucp/v1/checkout-sessions/${'a'.repeat(300)}`, 414, 'uri_too_long'],
      ['problem', `/api/v1/tasks/${'a'.repeat(300)}`, 414, 'uri_too_long'],
    ];
    for (const [surface, path, status, code] of cases) {
      const response = await fetch(`${fixture.url}${path}`);
      const answer = {
        status: response.status,
        type: response.headers.get('content-type') ?? '',
        body: await response.json(),
      };
      assert.equal(answer.status, status, `${path}: ${JSON.stringify(answer.body)}`);
      assert.equal(codeIn(surface, answer), code, path);
      assert.ok(response.headers.get('request-id'), path);
      assert.ok(!JSON.stringify(answer.body).includes('aaaa'), 'the URL is not echoed');
    }
  });
});
