// db-scope: both

import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import pino from 'pino';
import { loggerOptions } from '../../src/http/logging.ts';
import { startApiFixture } from '../helpers/api.ts';

const REQUEST_ID = 'agent-7.try-2';

interface Surface {
  name: string;
  url: string;
  headers: Record<string, string>;
  /** The error code the surface's body carries, read from its own format. */
  codeOf(body: Record<string, unknown>, contentType: string): string;
}

function problemCode(body: Record<string, unknown>, contentType: string): string {
  assert.match(contentType, /^application\/problem\+json/);
  assert.equal(body.request_id, REQUEST_ID);
  return String(body.code);
}

const SURFACES: Surface[] = [
  { name: 'REST', url: '/api/v1/tasks', headers: {}, codeOf: problemCode },
  {
    name: 'ACP',
    url: '/api/acp/checkout_sessions',
    headers: { 'idempotency-key': randomUUID() },
    codeOf: (body) => {
      assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'type']);
      assert.equal(body.type, 'invalid_request');
      return String(body.code);
    },
  },
  {
    name: 'UCP',
    url: '/api/ucp/v1/checkout-sessions',
    headers: { 'idempotency-key': randomUUID() },
    codeOf: (body) => {
      assert.equal((body.ucp as { status: string }).status, 'error');
      const [message] = body.messages as { type: string; code: string }[];
      assert.equal(message?.type, 'error');
      return String(message?.code);
    },
  },
  { name: 'MPP', url: '/api/mpp/plans/svc-pro-monthly', headers: {}, codeOf: problemCode },
];

describe('errors every surface shares, each in its own format', () => {
  it('answers an oversized body with 413, a wrong media type (text/plain too) with 415 and an unknown path with 404, echoing the Request-Id', async (t) => {
    const api = await startApiFixture(t, { env: { BODY_LIMIT_BYTES: '2048' } });
    for (const surface of SURFACES) {
      const send = async (path: string, contentType: string, body: string) => {
        const response = await fetch(`${api.url}${path}`, {
          method: 'POST',
          headers: {
            ...surface.headers,
            authorization: `Bearer ${api.org.key}`,
            'request-id': REQUEST_ID,
            'content-type': contentType,
          },
          body,
        });
        assert.equal(response.headers.get('request-id'), REQUEST_ID, surface.name);
        const type = response.headers.get('content-type') ?? '';
        return {
          status: response.status,
          code: surface.codeOf((await response.json()) as Record<string, unknown>, type),
        };
      };
      const oversized = JSON.stringify({ pad: 'x'.repeat(4096) });
      const tooLarge = await send(surface.url, 'application/json', oversized);
      const wrongType = await send(surface.url, 'application/xml', '<plan/>');
      const plainText = await send(surface.url, 'text/plain', '{}');
      const unknownPath = await send(`${surface.url}/nowhere/deeper`, 'application/json', '{}');
      assert.deepEqual(
        [tooLarge, wrongType, plainText, unknownPath],
        [
          { status: 413, code: surface.name === 'ACP' ? 'request_too_large' : 'body_too_large' },
          { status: 415, code: 'unsupported_media_type' },
          { status: 415, code: 'unsupported_media_type' },
          { status: 404, code: 'not_found' },
        ],
        surface.name,
      );
    }
  });

  it('answers a path whose parameter is empty (a trailing slash after a list) with 404, not a complaint about the parameter', async (t) => {
    const api = await startApiFixture(t);
    const withEmptyParameter: [surface: string, method: string, path: string][] = [
      ['REST', 'GET', '/api/v1/tasks/'],
      // POST is no method of `/tasks/:id` either: not a 405 naming the methods of an id.
      ['REST', 'POST', '/api/v1/tasks/'],
      ['ACP', 'GET', '/api/acp/checkout_sessions/'],
      ['UCP', 'GET', '/api/ucp/v1/checkout-sessions/'],
      ['MPP', 'POST', '/api/mpp/plans/'],
    ];
    for (const [name, method, path] of withEmptyParameter) {
      const surface = SURFACES.find((each) => each.name === name) ?? assert.fail(name);
      const response = await fetch(`${api.url}${path}`, {
        method,
        headers: { ...surface.headers, authorization: `Bearer ${api.org.key}`, 'request-id': REQUEST_ID },
      });
      const type = response.headers.get('content-type') ?? '';
      const body = (await response.json()) as Record<string, unknown>;
      assert.deepEqual(
        [response.status, surface.codeOf(body, type)],
        [404, 'not_found'],
        `${method} ${path}`,
      );
    }
  });

  it('takes an empty text/plain body as no body (fetch sends one with a bodiless DELETE)', async (t) => {
    const api = await startApiFixture(t);
    const risk = (await api.call('POST', '/risks', { json: { title: 'Laptops', likelihood: 2, impact: 3 } }))
      .body;
    const deleted = await fetch(`${api.url}/api/v1/risks/${risk.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${api.org.key}` },
      body: '',
    });
    assert.equal(deleted.status, 204, await deleted.text());
  });

  it('answers bytes Node cannot read as a request with a problem, a Request-Id, and a closed connection', async (t) => {
    const logs: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    });
    const api = await startApiFixture(t, { logger: pino(loggerOptions('trace'), sink) });
    const { port } = new URL(api.url);
    // The client sends its bytes and keeps its own side open, as a careless or hostile peer does:
    // the answer must still end, and the server must not keep the connection.
    const exchange = (bytes: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ port: Number(port), host: '127.0.0.1', allowHalfOpen: true }, () =>
          socket.write(bytes),
        );
        t.after(() => socket.destroy());
        let answer = '';
        socket.setEncoding('utf8').on('data', (chunk) => {
          answer += chunk;
        });
        socket.on('end', () => resolve(answer)).on('error', reject);
      });
    const openConnections = () =>
      new Promise<number>((resolve, reject) =>
        api.runtime.app.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      );
    const cases: [string, string, number][] = [
      ['headers over the limit', `GET /api/v1/me?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431],
      [
        'a malformed header line',
        'GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer svc_live_leak\r\nnot a header\r\n\r\n',
        400,
      ],
      ['no HTTP at all', 'HELLO\r\n\r\n', 400],
    ];
    for (const [what, bytes, status] of cases) {
      const answer = await exchange(bytes);
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      assert.match(head, new RegExp(`^HTTP/1.1 ${status} `), what);
      assert.match(head, /\r\ncontent-type: application\/problem\+json/i, what);
      assert.match(head, /\r\nconnection: close/i, what);
      const requestId = /\r\nrequest-id: (req_[0-9a-f-]{36})/i.exec(head)?.[1];
      assert.ok(requestId, what);
      const problem = JSON.parse(body);
      assert.deepEqual(
        [problem.status, problem.code, problem.request_id],
        [status, 'bad_request', requestId],
        what,
      );
      for (let waited = 0; (await openConnections()) > 0; waited += 10) {
        assert.ok(waited < 5000, `${what}: the server still holds the connection`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    assert.ok(
      logs.length > 0 && logs.every((line) => !line.includes('rawPacket') && !line.includes('svc_live_leak')),
      'the bytes received (credentials included) never reach the log, at any level',
    );
  });
});
