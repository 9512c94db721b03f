import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { AcpCheckoutSession, AcpError } from '../../src/channels/acp/schemas.ts';
import { assertAcpCompletedSession, assertAcpError, assertAcpSession } from '../helpers/acp-schema.ts';

const BASE = '/api/acp/checkout_sessions';

export interface AcpReply {
  status: number;
  headers: Record<string, string | undefined>;
  text: string;
}

export interface RequestOptions {
  /** The Idempotency-Key; a fresh UUID unless given, none at all with null. */
  key?: string | null;
  headers?: Record<string, string>;
}

type Transport = (request: {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  payload?: string;
}) => Promise<AcpReply>;

/** An ACP agent's view of the service: the five operations plus raw requests. */
export interface AcpClient {
  create(body: unknown, options?: RequestOptions): Promise<AcpReply>;
  update(id: string, body: unknown, options?: RequestOptions): Promise<AcpReply>;
  complete(id: string, body: unknown, options?: RequestOptions): Promise<AcpReply>;
  cancel(id: string, body?: unknown, options?: RequestOptions): Promise<AcpReply>;
  get(id: string, options?: RequestOptions): Promise<AcpReply>;
  raw(
    method: 'GET' | 'POST',
    url: string,
    headers: Record<string, string>,
    payload?: string,
  ): Promise<AcpReply>;
}

function clientOver(transport: Transport): AcpClient {
  const post = (url: string, body: unknown, options: RequestOptions = {}) => {
    const key = options.key === undefined ? randomUUID() : options.key;
    const headers: Record<string, string> = { ...(key === null ? {} : { 'idempotency-key': key }) };
    if (body !== undefined) headers['content-type'] = 'application/json';
    return transport({
      method: 'POST',
      url,
      headers: { ...headers, ...options.headers },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });
  };
  return {
    create: (body, options) => post(BASE, body, options),
    update: (id, body, options) => post(`${BASE}/${id}`, body, options),
    complete: (id, body, options) => post(`${BASE}/${id}/complete`, body, options),
    cancel: (id, body, options) => post(`${BASE}/${id}/cancel`, body, options),
    get: (id, options = {}) =>
      transport({ method: 'GET', url: `${BASE}/${id}`, headers: options.headers ?? {} }),
    raw: (method, url, headers, payload) =>
      transport({ method, url, headers, ...(payload === undefined ? {} : { payload }) }),
  };
}

/** Through `app.inject`, without a socket. */
export function injectingClient(app: FastifyInstance): AcpClient {
  return clientOver(async (request) => {
    const response = await app.inject(request);
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(response.headers)) headers[name] = value?.toString();
    return { status: response.statusCode, headers, text: response.body };
  });
}

/** Over real HTTP to a listening service. */
export function httpClient(baseUrl: string): AcpClient {
  return clientOver(async (request) => {
    const response = await fetch(`${baseUrl}${request.url}`, {
      method: request.method,
      headers: request.headers,
      ...(request.payload === undefined ? {} : { body: request.payload }),
    });
    return {
      status: response.status,
      headers: Object.fromEntries(response.headers.entries()),
      text: await response.text(),
    };
  });
}

function parsed(reply: AcpReply): unknown {
  assert.match(reply.headers['content-type'] ?? '', /^application\/json/, `content type of ${reply.text}`);
  return JSON.parse(reply.text);
}

/** The session in a reply, checked against the official schema (with its order once completed). */
export function expectSession(reply: AcpReply, status = 200): AcpCheckoutSession {
  assert.equal(reply.status, status, reply.text);
  const body = parsed(reply) as AcpCheckoutSession;
  if (body.status === 'completed') assertAcpCompletedSession(body);
  else assertAcpSession(body);
  return body;
}

/** ACP's flat Error in a reply, checked against the official schema. */
export function expectError(reply: AcpReply, status: number, code: string, param?: string): AcpError {
  assert.equal(reply.status, status, reply.text);
  const body = parsed(reply) as AcpError;
  assertAcpError(body);
  assert.equal(body.code, code, reply.text);
  if (param !== undefined) assert.equal(body.param, param, reply.text);
  return body;
}

export function createBody(itemId: string, email?: string): Record<string, unknown> {
  return {
    line_items: [{ id: itemId }],
    currency: 'usd',
    capabilities: {},
    ...(email ? { buyer: { email } } : {}),
  };
}

export function completeBody(token: string): { payment_data: Record<string, unknown> } {
  return {
    payment_data: { handler_id: 'psp_spt', instrument: { type: 'card', credential: { type: 'spt', token } } },
  };
}
