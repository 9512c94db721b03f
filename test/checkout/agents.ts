import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Channel } from '../../src/checkout/index.ts';
import { assertAcpCompletedSession, assertAcpError, assertAcpSession } from '../helpers/acp-schema.ts';
import { assertUcpCheckout, assertUcpErrorResponse } from '../helpers/ucp-schema.ts';

/** ACP and UCP as an agent speaks them over HTTP, for the checkout race and ordering tests. */

export interface Reply {
  status: number;
  body: unknown;
}

/** One checkout protocol as an agent speaks it, over one instance's HTTP app. */
export interface Agent {
  complete(id: string, token: string): Promise<Reply>;
  cancel(id: string): Promise<Reply>;
  changeItem(id: string, itemId: string): Promise<Reply>;
  get(id: string): Promise<Reply>;
}

/** What every reply of a session route must be: the session, or the protocol's own error body. */
export interface Protocol {
  agentOn(app: FastifyInstance): Agent;
  /** The session's status and total in the protocol's words; fails unless the body is a valid session. */
  session(reply: Reply): { status: string; total: number };
  /** Fails unless the reply is a 4xx in the protocol's error format; returns its code. */
  errorCode(reply: Reply): string;
  /**
   * Whether an update was applied; a refusal must be in the protocol's own form (ACP: an error;
   * UCP: while paying, the checkout unchanged with a message, else an error).
   */
  updateAccepted(reply: Reply): boolean;
  /** Whether a session reply tells of a declined payment. */
  declined(reply: Reply): boolean;
  ready: string;
  inProgress: string;
  completed: string;
  canceled: string;
}

async function inject(
  app: FastifyInstance,
  method: 'GET' | 'POST' | 'PUT',
  url: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Reply> {
  const response = await app.inject({
    method,
    url,
    headers: {
      ...headers,
      ...(method === 'GET' ? {} : { 'idempotency-key': randomUUID() }),
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
  });
  return { status: response.statusCode, body: response.body === '' ? undefined : response.json() };
}

export function totalOf(totals: { type: string; amount: number }[]): number {
  const total = totals.find((line) => line.type === 'total');
  assert.ok(total, 'the session shows a total');
  return total.amount;
}

const ACP: Protocol = {
  agentOn(app) {
    const base = '/api/acp/checkout_sessions';
    return {
      complete: (id, token) =>
        inject(
          app,
          'POST',
          `${base}/${id}/complete`,
          {},
          {
            payment_data: {
              handler_id: 'psp_spt',
              instrument: { type: 'card', credential: { type: 'spt', token } },
            },
          },
        ),
      cancel: (id) => inject(app, 'POST', `${base}/${id}/cancel`, {}, {}),
      changeItem: (id, itemId) => inject(app, 'POST', `${base}/${id}`, {}, { line_items: [{ id: itemId }] }),
      get: (id) => inject(app, 'GET', `${base}/${id}`, {}),
    };
  },
  session(reply) {
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    const body = reply.body as { status: string; totals: { type: string; amount: number }[] };
    if (body.status === 'completed') assertAcpCompletedSession(body);
    else assertAcpSession(body);
    return { status: body.status, total: totalOf(body.totals) };
  },
  errorCode(reply) {
    assert.ok(
      reply.status >= 400 && reply.status < 500,
      `a 4xx, not ${reply.status}: ${JSON.stringify(reply.body)}`,
    );
    assertAcpError(reply.body);
    return (reply.body as { code: string }).code;
  },
  updateAccepted(reply) {
    if (reply.status !== 200) {
      ACP.errorCode(reply);
      return false;
    }
    ACP.session(reply);
    return true;
  },
  declined(reply) {
    ACP.session(reply);
    const messages = (reply.body as { messages: { code?: string }[] }).messages;
    return messages.some((message) => message.code === 'payment_declined');
  },
  ready: 'ready_for_payment',
  inProgress: 'complete_in_progress',
  completed: 'completed',
  canceled: 'canceled',
};

const UCP_AGENT = { 'ucp-agent': 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"' };

const UCP: Protocol = {
  agentOn(app) {
    const base = '/api/ucp/v1/checkout-sessions';
    const lineItems = (itemId: string) => [{ item: { id: itemId }, quantity: 1 }];
    return {
      complete: (id, token) =>
        inject(app, 'POST', `${base}/${id}/complete`, UCP_AGENT, {
          payment: {
            instruments: [
              {
                id: 'instr_1',
                handler_id: 'psp_payments',
                type: 'card',
                selected: true,
                credential: { type: 'psp_payment_token', token },
              },
            ],
          },
        }),
      cancel: (id) => inject(app, 'POST', `${base}/${id}/cancel`, UCP_AGENT),
      changeItem: (id, itemId) =>
        inject(app, 'PUT', `${base}/${id}`, UCP_AGENT, {
          line_items: lineItems(itemId),
          buyer: { email: 'racer@example.com' },
        }),
      get: (id) => inject(app, 'GET', `${base}/${id}`, UCP_AGENT),
    };
  },
  session(reply) {
    assert.equal(reply.status, 200, JSON.stringify(reply.body));
    assertUcpCheckout(reply.body);
    const body = reply.body as { status: string; totals: { type: string; amount: number }[] };
    return { status: body.status, total: totalOf(body.totals) };
  },
  errorCode(reply) {
    assert.ok(
      reply.status >= 400 && reply.status < 500,
      `a 4xx, not ${reply.status}: ${JSON.stringify(reply.body)}`,
    );
    assertUcpErrorResponse(reply.body);
    return (reply.body as { messages: { code: string }[] }).messages[0]?.code ?? '';
  },
  updateAccepted(reply) {
    if (reply.status !== 200) {
      UCP.errorCode(reply);
      return false;
    }
    if (UCP.session(reply).status !== 'complete_in_progress') return true;
    const messages = (reply.body as { messages?: { code: string; severity: string }[] }).messages ?? [];
    assert.ok(
      messages.some((m) => m.code === 'complete_in_progress' && m.severity === 'recoverable'),
      'a refused update says why in a recoverable message',
    );
    return false;
  },
  declined(reply) {
    UCP.session(reply);
    const messages = (reply.body as { messages?: { code: string; content: string }[] }).messages ?? [];
    return messages.some((m) => m.code === 'payment_failed' && m.content.includes('declined'));
  },
  ready: 'ready_for_complete',
  inProgress: 'complete_in_progress',
  completed: 'completed',
  canceled: 'canceled',
};

export const PROTOCOLS: Record<Channel, Protocol> = { acp: ACP, ucp: UCP };
