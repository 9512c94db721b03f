/**
 * The example agent's three purchases, one function per protocol, each: read the discovery
 * document, pick the item, get a shared payment token for the price, pay, return the final answer.
 * ACP and UCP have no official client SDK in JavaScript (UCP's `@ucp-js/sdk` has types only and
 * predates 2026-08-25), so those two are plain `fetch`; MPP is the stock `mppx` client.
 */
import { randomUUID } from 'node:crypto';
import { Receipt } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { mintSandboxToken, type PspSandbox } from './psp.ts';

export type Protocol = 'acp' | 'ucp' | 'mpp';
export const PROTOCOLS: readonly Protocol[] = ['acp', 'ucp', 'mpp'];

export interface BuyOptions {
  baseUrl: string;
  item: string;
  email: string;
  /** A shared payment token to pay with; minted in the sandbox for the price when absent. */
  token?: string;
  psp: PspSandbox;
  paymentMethod: string;
}

/** Reports one step: its name and what happened. */
export type Say = (step: string, text: string) => void;

export interface Bought {
  /** The order as the protocol returns it. */
  order: unknown;
  /** The whole final answer (the completed session, or MPP's purchase result). */
  answer: Record<string, unknown>;
}

/** A failed step, with what the service answered. */
export class AgentError extends Error {
  readonly step: string;
  constructor(step: string, message: string) {
    super(message);
    this.step = step;
  }
}

// biome-ignore lint/suspicious/noExplicitAny: the documents are read as the service sends them
type Json = any;

async function request(step: string, method: string, url: string, init: RequestInit = {}): Promise<Json> {
  const response = await fetch(url, { ...init, method }).catch((error: Error) => {
    throw new AgentError(step, `${method} ${url}: ${error.message}`);
  });
  const text = await response.text();
  if (!response.ok) throw new AgentError(step, `${method} ${url} answered ${response.status}: ${text}`);
  return JSON.parse(text);
}

const postJson = (step: string, url: string, body: unknown, headers: Record<string, string>) =>
  request(step, 'POST', url, {
    headers: { 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...headers },
    body: JSON.stringify(body),
  });

const totalOf = (totals: { type: string; amount: number }[]) =>
  totals.find((total) => total.type === 'total')?.amount ?? 0;

async function tokenFor(options: BuyOptions, amount: number, currency: string, say: Say): Promise<string> {
  if (options.token) {
    say('token', `paying with the given token ${options.token}`);
    return options.token;
  }
  const token = await mintSandboxToken(options.psp, {
    amount,
    currency,
    paymentMethod: options.paymentMethod,
  });
  say(
    'token',
    `minted ${token} (${options.paymentMethod}, at most ${amount} ${currency}) at ${options.psp.url}`,
  );
  return token;
}

/** ACP: create a session for the item, pay its total with a token through the session's handler. */
export async function buyAcp(options: BuyOptions, say: Say): Promise<Bought> {
  const discovery = await request('discovery', 'GET', `${options.baseUrl}/.well-known/acp.json`);
  const api = discovery.api_base_url;
  const headers = { 'api-version': discovery.protocol.version };
  say('discovery', `ACP ${discovery.protocol.version}, API at ${api}`);

  const session = await postJson(
    'session',
    `${api}/checkout_sessions`,
    {
      line_items: [{ id: options.item }],
      currency: discovery.capabilities.supported_currencies[0],
      buyer: { email: options.email },
    },
    headers,
  );
  const total = totalOf(session.totals);
  say('session', `${session.id} ${session.status}, total ${total} ${session.currency}`);

  const token = await tokenFor(options, total, session.currency, say);
  const handler = session.capabilities.payment.handlers[0];
  const completed = await postJson(
    'complete',
    `${api}/checkout_sessions/${session.id}/complete`,
    {
      payment_data: {
        handler_id: handler.id,
        instrument: { type: 'card', credential: { type: 'spt', token } },
      },
    },
    headers,
  );
  if (completed.status !== 'completed') {
    throw new AgentError('complete', `session ${completed.status}: ${JSON.stringify(completed.messages)}`);
  }
  say('complete', `${completed.id} completed, order ${completed.order.id}`);
  return { order: completed.order, answer: completed };
}

/** The example agent's own UCP profile; the service reads its version, it never fetches it. */
const AGENT_PROFILE = 'https://agent.example/.well-known/ucp';

/** UCP: the profile names the REST endpoint and the payment handler; create, then complete. */
export async function buyUcp(options: BuyOptions, say: Say): Promise<Bought> {
  const profile = await request('discovery', 'GET', `${options.baseUrl}/.well-known/ucp`);
  const { version, services, payment_handlers } = profile.ucp;
  const endpoint = services['dev.ucp.shopping'].find((s: Json) => s.transport === 'rest').endpoint;
  const [handlerName, [handler]] = Object.entries<Json>(payment_handlers)[0] ?? [];
  const headers = { 'ucp-agent': `profile="${AGENT_PROFILE}"; version="${version}"` };
  say('discovery', `UCP ${version}, REST endpoint ${endpoint}, handler ${handlerName} (${handler.id})`);

  const session = await postJson(
    'session',
    `${endpoint}/checkout-sessions`,
    { line_items: [{ item: { id: options.item }, quantity: 1 }], buyer: { email: options.email } },
    headers,
  );
  const total = totalOf(session.totals);
  say('session', `${session.id} ${session.status}, total ${total} ${session.currency}`);

  const token = await tokenFor(options, total, session.currency, say);
  const instrument = {
    id: 'instr_1',
    handler_id: handler.id,
    type: handler.available_instruments[0].type,
    selected: true,
    credential: { type: 'psp_payment_token', token },
  };
  const completed = await postJson(
    'complete',
    `${endpoint}/checkout-sessions/${session.id}/complete`,
    { payment: { instruments: [instrument] } },
    headers,
  );
  if (completed.status !== 'completed') {
    throw new AgentError('complete', `session ${completed.status}: ${JSON.stringify(completed.messages)}`);
  }
  say('complete', `${completed.id} completed, order ${completed.order.id}`);
  return { order: completed.order, answer: completed };
}

/** The service's MPP method: a shared-payment-token charge, mppx's stock Stripe method renamed. */
const MPP_METHOD = 'psp';

/** MPP: the OpenAPI document prices one operation per item; mppx answers its 402 challenge. */
export async function buyMpp(options: BuyOptions, say: Say): Promise<Bought> {
  const document = await request('discovery', 'GET', `${options.baseUrl}/openapi.json`);
  const path = Object.keys(document.paths).find(
    (candidate) =>
      candidate.split('/').at(-1) === options.item && document.paths[candidate].post?.['x-payment-info'],
  );
  if (path === undefined)
    throw new AgentError(
      'discovery',
      `no operation of ${options.baseUrl}/openapi.json sells ${options.item}`,
    );
  const offer = document.paths[path].post['x-payment-info'].offers[0];
  const url = `${document.servers[0].url}${path}`;
  say('discovery', `MPP offer ${offer.amount} ${offer.currency} by method "${offer.method}" at POST ${url}`);
  if (offer.method !== MPP_METHOD)
    throw new AgentError('discovery', `this agent pays only method "${MPP_METHOD}"`);

  const psp = {
    ...stripe.charge({
      paymentMethod: options.paymentMethod,
      createToken: ({ amount, currency }) => tokenFor(options, Number(amount), currency, say),
    }),
    name: MPP_METHOD,
  } as const;
  const mppx = Mppx.create({
    methods: [psp],
    polyfill: false,
    onChallenge: async (challenge, { createCredential }) => {
      const { amount, currency } = challenge.request as { amount: string; currency: string };
      say('challenge', `402 challenge ${challenge.id}: ${amount} ${currency}, expires ${challenge.expires}`);
      return createCredential();
    },
  });
  const response = await mppx
    .fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ buyer: { email: options.email } }),
    })
    .catch((error: Error) => {
      throw new AgentError('pay', error.message);
    });
  const text = await response.text();
  if (response.status !== 200)
    throw new AgentError('pay', `POST ${url} answered ${response.status}: ${text}`);
  const answer = JSON.parse(text);
  say('pay', `paid, receipt reference ${Receipt.fromResponse(response).reference}`);
  return { order: answer, answer };
}

export const BUY: Record<Protocol, (options: BuyOptions, say: Say) => Promise<Bought>> = {
  acp: buyAcp,
  ucp: buyUcp,
  mpp: buyMpp,
};
