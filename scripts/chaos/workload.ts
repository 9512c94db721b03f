/**
 * The clients of the chaos run, all through the load balancer: agents buying on ACP, UCP and MPP
 * (each retrying the way its protocol allows, never paying a purchase twice: the same idempotency
 * key, session or MPP credential), and a workspace's REST client writing tasks and uploading
 * evidence. What each client saw succeed is what the invariants hold the service to.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Challenge, Credential } from 'mppx';
import { call, type Journal, parseJson } from './journal.ts';

export const ITEM = 'svc-pro-monthly';
const UCP_AGENT = 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"';

export type Protocol = 'acp' | 'ucp' | 'mpp';

export interface Purchase {
  protocol: Protocol;
  email: string;
  /** succeeded: the client saw the order; refused: a final 4xx; abandoned: no answer before its deadline. */
  outcome: 'succeeded' | 'refused' | 'abandoned';
  orderId: string | undefined;
  detail: string;
}

export interface Acknowledged {
  /** The webhook event the write must produce. */
  type: 'task.created' | 'evidence.created';
  id: string;
}

export interface Upload {
  id: string;
  sha256: string;
  bytes: number;
}

export interface Client {
  url: string;
  journal: Journal;
  /** How long a purchase keeps retrying before the client gives up on it. */
  purchaseDeadlineMs: number;
}

/** No answer, a conflict (key in use), too many requests, or a server error: ask again. */
function retryable(status: number): boolean {
  return (
    status === 0 || status === 408 || status === 409 || status === 425 || status === 429 || status >= 500
  );
}

function retryDelay(headers: Headers): number {
  const seconds = Number(headers.get('retry-after'));
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 5) * 1000 : 500;
}

const jsonPost = (key: string | undefined, extra: Record<string, string> = {}) => ({
  'content-type': 'application/json',
  ...(key ? { 'idempotency-key': key } : {}),
  ...extra,
});

/** Opens a session (the same idempotency key on every retry); its id, or the reason it failed. */
async function openSession(
  client: Client,
  kind: string,
  url: string,
  body: unknown,
  headers: Record<string, string>,
  deadline: number,
): Promise<{ id: string } | { failed: Purchase['outcome']; detail: string }> {
  const key = randomUUID();
  for (;;) {
    const reply = await call(client.journal, kind, url, {
      method: 'POST',
      headers: jsonPost(key, headers),
      body: JSON.stringify(body),
    });
    const id = parseJson(reply.text).id;
    if ((reply.status === 200 || reply.status === 201) && typeof id === 'string') return { id };
    if (!retryable(reply.status)) return { failed: 'refused', detail: `${kind} ${reply.status}` };
    if (Date.now() > deadline) return { failed: 'abandoned', detail: `${kind} ${reply.status}` };
    await sleep(retryDelay(reply.headers));
  }
}

/**
 * Completes a session until it is completed: the same key while the request may still be running
 * (no answer, 409, 5xx), a new request once an answer said "not yet".
 */
async function completeSession(
  client: Client,
  kind: string,
  url: string,
  body: unknown,
  headers: Record<string, string>,
  deadline: number,
): Promise<{ outcome: Purchase['outcome']; orderId: string | undefined; detail: string }> {
  let key = randomUUID();
  for (;;) {
    const reply = await call(client.journal, kind, url, {
      method: 'POST',
      headers: jsonPost(key, headers),
      body: JSON.stringify(body),
    });
    const session = parseJson(reply.text);
    if (reply.status === 200 && session.status === 'completed') {
      const order = session.order as { id?: string } | undefined;
      return { outcome: 'succeeded', orderId: order?.id, detail: '' };
    }
    if (Date.now() > deadline)
      return { outcome: 'abandoned', orderId: undefined, detail: `${kind} ${reply.status}` };
    if (reply.status === 200) key = randomUUID();
    else if (!retryable(reply.status)) {
      return {
        outcome: 'refused',
        orderId: undefined,
        detail: `${kind} ${reply.status} ${reply.text.slice(0, 200)}`,
      };
    }
    await sleep(retryDelay(reply.headers));
  }
}

export async function buyAcp(client: Client, token: string, email: string, item = ITEM): Promise<Purchase> {
  const deadline = Date.now() + client.purchaseDeadlineMs;
  const base = `${client.url}/api/acp/checkout_sessions`;
  const body = { line_items: [{ id: item }], currency: 'usd', capabilities: {}, buyer: { email } };
  const opened = await openSession(client, 'acp.create', base, body, {}, deadline);
  if (!('id' in opened))
    return { protocol: 'acp', email, outcome: opened.failed, orderId: undefined, detail: opened.detail };
  const payment = {
    payment_data: { handler_id: 'psp_spt', instrument: { type: 'card', credential: { type: 'spt', token } } },
  };
  const done = await completeSession(
    client,
    'acp.complete',
    `${base}/${opened.id}/complete`,
    payment,
    {},
    deadline,
  );
  return { protocol: 'acp', email, ...done };
}

export async function buyUcp(client: Client, token: string, email: string, item = ITEM): Promise<Purchase> {
  const deadline = Date.now() + client.purchaseDeadlineMs;
  const base = `${client.url}/api/ucp/v1/checkout-sessions`;
  const agent = { 'ucp-agent': UCP_AGENT };
  const body = { line_items: [{ item: { id: item }, quantity: 1 }], buyer: { email } };
  const opened = await openSession(client, 'ucp.create', base, body, agent, deadline);
  if (!('id' in opened))
    return { protocol: 'ucp', email, outcome: opened.failed, orderId: undefined, detail: opened.detail };
  const payment = {
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
  };
  const done = await completeSession(
    client,
    'ucp.complete',
    `${base}/${opened.id}/complete`,
    payment,
    agent,
    deadline,
  );
  return { protocol: 'ucp', email, ...done };
}

/**
 * MPP: the unpaid request answers 402 with a challenge; the paid retry carries the credential.
 * Once the credential was sent, only that credential is ever sent again: a new challenge would be
 * a new payment.
 */
export async function buyMpp(client: Client, token: string, email: string, item = ITEM): Promise<Purchase> {
  const deadline = Date.now() + client.purchaseDeadlineMs;
  const endpoint = `${client.url}/api/mpp/plans/${item}`;
  const body = JSON.stringify({ buyer: { email } });
  const headers = { 'content-type': 'application/json' };
  let authorization: string | undefined;
  while (authorization === undefined) {
    const reply = await call(client.journal, 'mpp.challenge', endpoint, { method: 'POST', headers, body });
    if (reply.status === 402 && reply.headers.get('www-authenticate')) {
      const challenge = Challenge.fromResponse(
        new Response(reply.text, { status: 402, headers: reply.headers }),
      );
      authorization = Credential.serialize(Credential.from({ challenge, payload: { spt: token } }));
    } else if (!retryable(reply.status) || Date.now() > deadline) {
      const outcome = retryable(reply.status) ? 'abandoned' : 'refused';
      return { protocol: 'mpp', email, outcome, orderId: undefined, detail: `mpp.challenge ${reply.status}` };
    } else await sleep(retryDelay(reply.headers));
  }
  for (;;) {
    const reply = await call(client.journal, 'mpp.pay', endpoint, {
      method: 'POST',
      headers: { ...headers, authorization },
      body,
    });
    const result = parseJson(reply.text);
    if (reply.status === 200 && typeof result.order_id === 'string') {
      return { protocol: 'mpp', email, outcome: 'succeeded', orderId: result.order_id, detail: '' };
    }
    if (!retryable(reply.status)) {
      const detail = `mpp.pay ${reply.status} ${reply.text.slice(0, 200)}`;
      return { protocol: 'mpp', email, outcome: 'refused', orderId: undefined, detail };
    }
    if (Date.now() > deadline) {
      return {
        protocol: 'mpp',
        email,
        outcome: 'abandoned',
        orderId: undefined,
        detail: `mpp.pay ${reply.status}`,
      };
    }
    await sleep(retryDelay(reply.headers));
  }
}

export const BUY: Record<Protocol, typeof buyAcp> = { acp: buyAcp, ucp: buyUcp, mpp: buyMpp };

/** A workspace's REST client: writes are not retried (a repeat could create a second task). */
export class RestClient {
  readonly acknowledged: Acknowledged[] = [];
  readonly uploads: Upload[] = [];
  #written = 0;

  readonly #client: Client;
  readonly #apiKey: string;

  constructor(client: Client, apiKey: string) {
    this.#client = client;
    this.#apiKey = apiKey;
  }

  #headers(extra: Record<string, string> = {}) {
    return { authorization: `Bearer ${this.#apiKey}`, ...extra };
  }

  async createTask(): Promise<void> {
    const reply = await call(this.#client.journal, 'rest.task', `${this.#client.url}/api/v1/tasks`, {
      method: 'POST',
      headers: this.#headers({ 'content-type': 'application/json' }),
      body: JSON.stringify({ title: `Chaos task ${++this.#written}` }),
    });
    const id = parseJson(reply.text).id;
    if (reply.status === 201 && typeof id === 'string') this.acknowledged.push({ type: 'task.created', id });
  }

  /** A text file of 1 to 64 KiB of random printable bytes. */
  async uploadEvidence(): Promise<void> {
    const content = randomBytes(768 + Math.floor(Math.random() * 48_000)).toString('base64');
    const form = new FormData();
    form.set('title', `Chaos evidence ${++this.#written}`);
    form.set('file', new Blob([content], { type: 'text/plain' }), `chaos-${this.#written}.txt`);
    const reply = await call(this.#client.journal, 'rest.evidence', `${this.#client.url}/api/v1/evidence`, {
      method: 'POST',
      headers: this.#headers(),
      body: form,
    });
    const id = parseJson(reply.text).id;
    if (reply.status === 201 && typeof id === 'string') {
      this.acknowledged.push({ type: 'evidence.created', id });
      const sha256 = createHash('sha256').update(content).digest('hex');
      this.uploads.push({ id, sha256, bytes: Buffer.byteLength(content) });
    }
  }

  /** The file's bytes as downloaded through the balancer, hashed; undefined unless 200. Waits out 429s. */
  async download(id: string): Promise<string | undefined> {
    const url = `${this.#client.url}/api/v1/evidence/${id}/file`;
    for (let tries = 1; ; tries++) {
      const reply = await call(this.#client.journal, 'rest.download', url, { headers: this.#headers() });
      if (reply.status === 429 && tries < 30) {
        await sleep(retryDelay(reply.headers));
        continue;
      }
      return reply.status === 200 ? createHash('sha256').update(reply.bytes).digest('hex') : undefined;
    }
  }
}
