/**
 * The doctor's checks, in the order they run. Each returns its evidence, throws an Error to fail
 * (the message is the evidence) or a Skip to be skipped. Sessions the checks open are canceled.
 */
import { Challenge, Credential, Receipt } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { validate as validateDiscovery } from 'mppx/discovery';
import { buyAcp, buyUcp } from '../agent/buy.ts';
import { mintSandboxToken } from '../agent/psp.ts';
import { type Answer, type Context, http, type Json, type MppOffer, needs, newKey, Skip } from './context.ts';
import type { Validate } from './schemas.ts';

export interface Check {
  id: string;
  run(ctx: Context): Promise<string>;
}

function expect(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

function valid(validate: Validate, body: unknown, what: string): void {
  const problem = validate(body);
  expect(problem === undefined, `${what} does not validate: ${problem}`);
}

/** An exact status, or any client error where the protocol leaves the number open. */
type Status = number | '4xx';
const statusIs = (answer: Answer, status: Status) =>
  status === '4xx' ? answer.status >= 400 && answer.status < 500 : answer.status === status;

const totalOf = (totals: Json) => (totals ?? []).find((t: Json) => t.type === 'total')?.amount;
const originOf = (url: string) => new URL(url).origin;

/** ACP request headers: the discovered version and a fresh Idempotency-Key. */
const acpHeaders = (version: string, key = newKey()) => ({ 'api-version': version, 'idempotency-key': key });
const ucpHeaders = (agent: string, key = newKey()) => ({ 'ucp-agent': agent, 'idempotency-key': key });

async function openAcpSession(ctx: Context, item: string, key?: string): Promise<Answer> {
  const { api, version } = await needs(ctx.acp, 'acp.discovery');
  return http('POST', `${api}/checkout_sessions`, {
    headers: acpHeaders(version, key),
    body: { line_items: [{ id: item }], currency: 'usd' },
  });
}

async function openUcpSession(ctx: Context, item: string, key?: string): Promise<Answer> {
  const { endpoint, agent } = await needs(ctx.ucp, 'ucp.discovery');
  return http('POST', `${endpoint}/checkout-sessions`, {
    headers: ucpHeaders(agent, key),
    body: { line_items: [{ item: { id: item }, quantity: 1 }] },
  });
}

async function cancelAcp(ctx: Context, id: string): Promise<Answer> {
  const { api, version } = await ctx.acp();
  return http('POST', `${api}/checkout_sessions/${id}/cancel`, { headers: acpHeaders(version) });
}

async function cancelUcp(ctx: Context, id: string): Promise<Answer> {
  const { endpoint, agent } = await ctx.ucp();
  return http('POST', `${endpoint}/checkout-sessions/${id}/cancel`, { headers: ucpHeaders(agent) });
}

const firstOffer = async (ctx: Context): Promise<MppOffer> => {
  const { offers } = await needs(ctx.mpp, 'mpp.discovery');
  return offers.reduce((cheapest, offer) =>
    Number(offer.amount) < Number(cheapest.amount) ? offer : cheapest,
  );
};

/**
 * Purchases are made with sandbox tokens only, and without `--allow-purchases` only where they
 * cost nothing and can work: a PSP sandbox answers at `--psp-url` and sends its events to this
 * deployment (its `webhook_endpoint_url` has the origin the deployment's ACP document names),
 * so it is the sandbox the deployment charges at and the tokens minted there are ones it knows.
 * Decided once per run; each purchase check asks.
 */
async function requirePurchases(ctx: Context): Promise<void> {
  let refusal = purchaseRefusals.get(ctx);
  if (refusal === undefined) {
    refusal = whyNotBuy(ctx);
    purchaseRefusals.set(ctx, refusal);
  }
  const reason = await refusal;
  if (reason !== null) throw new Skip(reason);
}

const purchaseRefusals = new WeakMap<Context, Promise<string | null>>();

/** Why this run may not buy, or null when it may. */
async function whyNotBuy(ctx: Context): Promise<string | null> {
  const { psp, allowPurchases } = ctx.options;
  if (!psp.key.startsWith('sk_test_')) return 'purchases need a sandbox key (sk_test_...)';
  if (allowPurchases) return null;
  const ask = '--allow-purchases buys with sandbox tokens anyway';
  const { api } = await needs(ctx.acp, 'acp.discovery');
  const deployment = new URL(api).origin;
  const served = await originServedBySandbox(psp);
  if (served === undefined) return `no PSP sandbox answers at ${psp.url} (--psp-url); ${ask}`;
  if (served !== deployment) return `the sandbox at ${psp.url} serves ${served}, not ${deployment}; ${ask}`;
  return null;
}

/**
 * The origin the PSP sandbox at `psp.url` sends its events to ('nowhere' without an endpoint);
 * undefined when no sandbox answers there.
 */
async function originServedBySandbox(psp: { url: string; key: string }): Promise<string | undefined> {
  try {
    const response = await fetch(`${psp.url}/_sandbox`, {
      headers: { authorization: `Bearer ${psp.key}` },
      signal: AbortSignal.timeout(2000),
    });
    const body = (await response.json()) as { object?: unknown; webhook_endpoint_url?: unknown };
    if (response.status !== 200 || body.object !== 'sandbox') return undefined;
    const endpoint = body.webhook_endpoint_url;
    return typeof endpoint === 'string' && URL.canParse(endpoint) ? new URL(endpoint).origin : 'nowhere';
  } catch {
    return undefined;
  }
}

/** Purchases the MPP check makes, kept for the single-use check that reuses its credential. */
const paidMpp = new WeakMap<Context, { offer: MppOffer; credential: string; orderId: string }>();

export const CHECKS: Check[] = [
  {
    id: 'acp.discovery',
    async run(ctx) {
      const { doc, version, schemas, api } = await ctx.acp();
      valid(schemas.discovery, doc, '/.well-known/acp.json');
      expect(doc.protocol.supported_versions.includes(version), `supported_versions lacks ${version}`);
      return `ACP ${version}, API at ${api}, valid DiscoveryResponse`;
    },
  },
  {
    id: 'ucp.discovery',
    async run(ctx) {
      const { doc, version, schemas, endpoint } = await ctx.ucp();
      valid(schemas.businessProfile, doc, '/.well-known/ucp');
      expect(doc.ucp.capabilities?.['dev.ucp.shopping.checkout'], 'no dev.ucp.shopping.checkout capability');
      const handlers = Object.values<Json[]>(doc.ucp.payment_handlers ?? {}).flat();
      expect(handlers.length > 0, 'no payment handler');
      return `UCP ${version}, REST endpoint ${endpoint}, ${handlers.length} payment handler(s), valid business profile`;
    },
  },
  {
    id: 'ucp.discovery.cacheable',
    async run(ctx) {
      const { answer } = await needs(ctx.ucp, 'ucp.discovery');
      const cacheControl = answer.headers.get('cache-control') ?? '';
      const maxAge = Number(/max-age=(\d+)/.exec(cacheControl)?.[1] ?? 0);
      expect(
        /\bpublic\b/.test(cacheControl) && maxAge >= 60,
        `Cache-Control "${cacheControl}" is not public with max-age >= 60`,
      );
      expect(
        !/private|no-store|no-cache/.test(cacheControl),
        `Cache-Control "${cacheControl}" forbids caching`,
      );
      const etag = answer.headers.get('etag');
      if (etag === null) return `Cache-Control: ${cacheControl} (no ETag)`;
      const revalidated = await http('GET', `${ctx.base}/.well-known/ucp`, {
        headers: { 'if-none-match': etag },
      });
      expect(revalidated.status === 304, `If-None-Match ${etag} answered ${revalidated.status}, not 304`);
      return `Cache-Control: ${cacheControl}; ETag revalidates with 304`;
    },
  },
  {
    id: 'mpp.discovery',
    async run(ctx) {
      const { doc, offers } = await ctx.mpp();
      expect(/^3\.1\./.test(doc.openapi), `openapi is ${doc.openapi}, not 3.1.x`);
      const errors = validateDiscovery(doc);
      expect(errors.length === 0, `mppx finds: ${JSON.stringify(errors).slice(0, 300)}`);
      for (const offer of offers) {
        expect(/^\d+$/.test(offer.amount), `${offer.item}: amount "${offer.amount}" is not minor units`);
        expect(
          typeof offer.currency === 'string' && typeof offer.method === 'string',
          `${offer.item}: offer lacks currency or method`,
        );
      }
      return `OpenAPI ${doc.openapi}, ${offers.length} priced operations, valid for mppx`;
    },
  },
  {
    id: 'discovery.agree',
    async run(ctx) {
      const acp = await needs(ctx.acp, 'acp.discovery');
      const ucp = await needs(ctx.ucp, 'ucp.discovery');
      const mpp = await needs(ctx.mpp, 'mpp.discovery');
      const origins = new Set([
        originOf(acp.api),
        originOf(ucp.endpoint),
        ...mpp.offers.map((o) => originOf(o.url)),
      ]);
      expect(origins.size === 1, `the documents name different origins: ${[...origins].join(', ')}`);
      const currencies: string[] = acp.doc.capabilities.supported_currencies;
      const foreign = mpp.offers.filter((offer) => !currencies.includes(offer.currency));
      expect(
        foreign.length === 0,
        `MPP prices ${foreign.map((o) => `${o.item} in ${o.currency}`).join(', ')}; ACP supports ${currencies.join(', ')}`,
      );
      const networkIds = Object.values<Json[]>(ucp.doc.ucp.payment_handlers)
        .flat()
        .map((h) => h.config?.network_profile_id)
        .filter(Boolean);
      const { challenge } = await ctx.probe(await firstOffer(ctx));
      const challengeNetwork = (challenge.request as Json).methodDetails?.networkId;
      expect(
        networkIds.length === 0 || networkIds.includes(challengeNetwork),
        `UCP handler network ${networkIds.join(', ')} differs from the MPP challenge's ${challengeNetwork}`,
      );
      return `one origin ${[...origins][0]}; currencies ${currencies.join(', ')}; PSP network ${challengeNetwork}`;
    },
  },
  {
    id: 'catalog.prices',
    async run(ctx) {
      const { offers } = await needs(ctx.mpp, 'mpp.discovery');
      await needs(ctx.acp, 'acp.discovery');
      await needs(ctx.ucp, 'ucp.discovery');
      const disagreements: string[] = [];
      for (const offer of offers) {
        const acp = await openAcpSession(ctx, offer.item);
        const ucp = await openUcpSession(ctx, offer.item);
        const { challenge } = await ctx.probe(offer);
        const request = challenge.request as Json;
        const seen = {
          'MPP offer': `${offer.amount} ${offer.currency}`,
          'ACP session':
            acp.status === 201 ? `${totalOf(acp.json.totals)} ${acp.json.currency}` : `HTTP ${acp.status}`,
          'UCP session':
            ucp.status === 201 ? `${totalOf(ucp.json.totals)} ${ucp.json.currency}` : `HTTP ${ucp.status}`,
          '402 challenge': `${request.amount} ${request.currency}`,
        };
        if (new Set(Object.values(seen)).size !== 1) {
          disagreements.push(
            `${offer.item}: ${Object.entries(seen)
              .map(([where, price]) => `${where} ${price}`)
              .join(', ')}`,
          );
        }
        if (acp.status === 201) await cancelAcp(ctx, acp.json.id);
        if (ucp.status === 201) await cancelUcp(ctx, ucp.json.id);
      }
      expect(disagreements.length === 0, disagreements.join('; '));
      return `${offers.length} items, the same price on ACP, UCP, MPP and the 402: ${offers.map((o) => `${o.item} ${o.amount} ${o.currency}`).join(', ')}`;
    },
  },
  {
    id: 'acp.endpoints',
    async run(ctx) {
      const { api, version, schemas } = await needs(ctx.acp, 'acp.discovery');
      const item = (await firstOffer(ctx)).item;
      const created = await openAcpSession(ctx, item);
      expect(created.status === 201, `POST ${api}/checkout_sessions answered ${created.status}`);
      valid(schemas.session, created.json, 'the created session');
      const id = created.json.id;
      const read = await http('GET', `${api}/checkout_sessions/${id}`, {
        headers: { 'api-version': version },
      });
      expect(read.status === 200, `GET .../checkout_sessions/{id} answered ${read.status}`);
      valid(schemas.session, read.json, 'the session read');
      const updated = await http('POST', `${api}/checkout_sessions/${id}`, {
        headers: acpHeaders(version),
        body: { buyer: { email: ctx.options.email } },
      });
      expect(updated.status === 200, `POST .../checkout_sessions/{id} (update) answered ${updated.status}`);
      valid(schemas.session, updated.json, 'the updated session');
      const canceled = await cancelAcp(ctx, id);
      expect(
        canceled.status === 200 && canceled.json.status === 'canceled',
        `POST .../cancel answered ${canceled.status} ${canceled.json?.status}`,
      );
      valid(schemas.session, canceled.json, 'the canceled session');
      return 'create 201, read 200, update 200, cancel 200 (canceled); every session valid';
    },
  },
  {
    id: 'ucp.endpoints',
    async run(ctx) {
      const { endpoint, agent, schemas } = await needs(ctx.ucp, 'ucp.discovery');
      const item = (await firstOffer(ctx)).item;
      const created = await openUcpSession(ctx, item);
      expect(created.status === 201, `POST ${endpoint}/checkout-sessions answered ${created.status}`);
      valid(schemas.checkout, created.json, 'the created checkout');
      const id = created.json.id;
      const read = await http('GET', `${endpoint}/checkout-sessions/${id}`, {
        headers: { 'ucp-agent': agent },
      });
      expect(read.status === 200, `GET .../checkout-sessions/{id} answered ${read.status}`);
      valid(schemas.checkout, read.json, 'the checkout read');
      const updated = await http('PUT', `${endpoint}/checkout-sessions/${id}`, {
        headers: ucpHeaders(agent),
        body: { line_items: [{ item: { id: item }, quantity: 1 }], buyer: { email: ctx.options.email } },
      });
      expect(updated.status === 200, `PUT .../checkout-sessions/{id} answered ${updated.status}`);
      valid(schemas.checkout, updated.json, 'the updated checkout');
      const canceled = await cancelUcp(ctx, id);
      expect(
        canceled.status === 200 && canceled.json.status === 'canceled',
        `POST .../cancel answered ${canceled.status} ${canceled.json?.status}`,
      );
      valid(schemas.checkout, canceled.json, 'the canceled checkout');
      return 'create 201, read 200, update 200, cancel 200 (canceled); every checkout valid';
    },
  },
  {
    id: 'mpp.endpoints',
    async run(ctx) {
      const { offers, declared } = await needs(ctx.mpp, 'mpp.discovery');
      for (const offer of offers) {
        const { answer } = await ctx.probe(offer);
        valid(declared(offer, 402), answer.json, `the 402 body of ${offer.path}`);
      }
      return `${offers.length} operations answer 402 with a challenge and the PaymentProblem body they declare`;
    },
  },
  {
    id: 'acp.errors',
    async run(ctx) {
      const { api, version, schemas } = await needs(ctx.acp, 'acp.discovery');
      const cases: [string, Promise<Answer>, Status][] = [
        [
          'unknown session',
          http('GET', `${api}/checkout_sessions/cs_doctor_unknown`, { headers: { 'api-version': version } }),
          404,
        ],
        ['unknown item', openAcpSession(ctx, 'doctor-no-such-item'), 400],
        [
          'no Idempotency-Key',
          http('POST', `${api}/checkout_sessions`, {
            headers: { 'api-version': version },
            body: { line_items: [{ id: 'x' }], currency: 'usd' },
          }),
          400,
        ],
        [
          'malformed JSON',
          http('POST', `${api}/checkout_sessions`, {
            headers: acpHeaders(version),
            body: '{"line_items": [',
          }),
          400,
        ],
        [
          'unknown API-Version',
          http('GET', `${api}/checkout_sessions/cs_doctor_unknown`, {
            headers: { 'api-version': '1999-01-01' },
          }),
          '4xx',
        ],
      ];
      const seen: string[] = [];
      for (const [what, pending, status] of cases) {
        const answer = await pending;
        expect(statusIs(answer, status), `${what}: answered ${answer.status}, not ${status}`);
        valid(schemas.error, answer.json, `the ${what} error`);
        seen.push(`${what} ${answer.status} ${answer.json.code}`);
      }
      return `valid ACP Error bodies: ${seen.join(', ')}`;
    },
  },
  {
    id: 'ucp.errors',
    async run(ctx) {
      const { endpoint, agent, schemas } = await needs(ctx.ucp, 'ucp.discovery');
      const cases: [string, Promise<Answer>, Status][] = [
        [
          'unknown session',
          http('GET', `${endpoint}/checkout-sessions/cs_doctor_unknown`, { headers: { 'ucp-agent': agent } }),
          404,
        ],
        ['unknown item', openUcpSession(ctx, 'doctor-no-such-item'), 400],
        [
          'no Idempotency-Key',
          http('POST', `${endpoint}/checkout-sessions`, {
            headers: { 'ucp-agent': agent },
            body: { line_items: [{ item: { id: 'x' }, quantity: 1 }] },
          }),
          400,
        ],
        [
          'malformed JSON',
          http('POST', `${endpoint}/checkout-sessions`, {
            headers: ucpHeaders(agent),
            body: '{"line_items": [',
          }),
          400,
        ],
        [
          'unknown UCP-Agent version',
          http('GET', `${endpoint}/checkout-sessions/cs_doctor_unknown`, {
            headers: {
              'ucp-agent': 'profile="https://doctor.example/.well-known/ucp"; version="1999-01-01"',
            },
          }),
          '4xx',
        ],
      ];
      const seen: string[] = [];
      for (const [what, pending, status] of cases) {
        const answer = await pending;
        expect(statusIs(answer, status), `${what}: answered ${answer.status}, not ${status}`);
        valid(schemas.errorResponse, answer.json, `the ${what} error`);
        seen.push(`${what} ${answer.status} ${answer.json.messages?.[0]?.code}`);
      }
      return `valid error_response bodies: ${seen.join(', ')}`;
    },
  },
  {
    id: 'mpp.errors',
    async run(ctx) {
      const { declared } = await needs(ctx.mpp, 'mpp.discovery');
      const offer = await firstOffer(ctx);
      const invalid = await http('POST', offer.url, { body: { buyer: {} } });
      expect(invalid.status === 400, `a body without buyer.email answered ${invalid.status}, not 400`);
      expect(
        invalid.headers.get('content-type')?.startsWith('application/problem+json'),
        'the 400 is not application/problem+json',
      );
      valid(declared(offer, 400), invalid.json, 'the 400 body');
      const malformed = await http('POST', offer.url, {
        headers: { authorization: 'Payment !!not-a-credential' },
        body: { buyer: { email: ctx.options.email } },
      });
      expect(malformed.status === 402, `a malformed credential answered ${malformed.status}, not 402`);
      expect(
        String(malformed.json?.type).startsWith('https://paymentauth.org/problems/'),
        `the 402 type ${malformed.json?.type} is not a payment problem`,
      );
      valid(declared(offer, 402), malformed.json, 'the malformed-credential 402 body');
      expect(
        malformed.headers.get('www-authenticate')?.startsWith('Payment '),
        'the 402 carries no fresh challenge',
      );
      return `400 problem+json (${invalid.json.code ?? invalid.json.type}), malformed credential 402 ${malformed.json.type}`;
    },
  },
  {
    id: 'acp.idempotency',
    async run(ctx) {
      const { schemas } = await needs(ctx.acp, 'acp.discovery');
      const [first, second] = (await needs(ctx.mpp, 'mpp.discovery')).offers;
      expect(first && second, 'needs two items');
      const key = newKey();
      const original = await openAcpSession(ctx, first.item, key);
      expect(original.status === 201, `create answered ${original.status}`);
      const replay = await openAcpSession(ctx, first.item, key);
      expect(
        replay.status === original.status && replay.text === original.text,
        'the replay is not byte-identical to the first answer',
      );
      expect(
        replay.headers.get('idempotent-replayed') === 'true',
        'the replay lacks Idempotent-Replayed: true',
      );
      const conflict = await openAcpSession(ctx, second.item, key);
      expect(
        conflict.status === 422 && conflict.json?.code === 'idempotency_conflict',
        `the same key with another body answered ${conflict.status} ${conflict.json?.code}, not 422 idempotency_conflict`,
      );
      valid(schemas.error, conflict.json, 'the conflict error');
      await cancelAcp(ctx, original.json.id);
      return 'replay byte-identical with Idempotent-Replayed: true; another body 422 idempotency_conflict';
    },
  },
  {
    id: 'ucp.idempotency',
    async run(ctx) {
      const { schemas } = await needs(ctx.ucp, 'ucp.discovery');
      const [first, second] = (await needs(ctx.mpp, 'mpp.discovery')).offers;
      expect(first && second, 'needs two items');
      const key = newKey();
      const original = await openUcpSession(ctx, first.item, key);
      expect(original.status === 201, `create answered ${original.status}`);
      const replay = await openUcpSession(ctx, first.item, key);
      expect(
        replay.status === original.status && replay.text === original.text,
        'the replay is not byte-identical to the first answer',
      );
      expect(
        replay.headers.get('idempotent-replayed') === 'true',
        'the replay lacks Idempotent-Replayed: true',
      );
      const conflict = await openUcpSession(ctx, second.item, key);
      const code = conflict.json?.messages?.[0]?.code;
      expect(
        conflict.status === 409 && code === 'idempotency_conflict',
        `the same key with another body answered ${conflict.status} ${code}, not 409 idempotency_conflict`,
      );
      valid(schemas.errorResponse, conflict.json, 'the conflict error');
      await cancelUcp(ctx, original.json.id);
      return 'replay byte-identical with Idempotent-Replayed: true; another body 409 idempotency_conflict';
    },
  },
  {
    id: 'mpp.challenge',
    async run(ctx) {
      const offer = await firstOffer(ctx);
      const { answer, challenge } = await ctx.probe(offer);
      expect(
        answer.headers.get('cache-control')?.includes('no-store'),
        `the 402 has Cache-Control "${answer.headers.get('cache-control')}", not no-store`,
      );
      expect(
        challenge.method === offer.method && challenge.intent === 'charge',
        `challenge ${challenge.method}/${challenge.intent}, offer ${offer.method}/charge`,
      );
      expect(challenge.realm && challenge.id, 'the challenge lacks id or realm');
      const expires = Date.parse(String(challenge.expires));
      expect(expires > Date.now(), `the challenge expires at ${challenge.expires}, not in the future`);
      const request = challenge.request as Json;
      expect(
        /^\d+$/.test(String(request.amount)) && request.currency,
        'the request lacks amount or currency',
      );
      const again = await ctx.probeChallenge(offer);
      expect(
        again.challenge.id !== challenge.id,
        'two requests got the same challenge id: challenges are not fresh',
      );
      return `Payment ${challenge.method}/${challenge.intent} realm ${challenge.realm}, ${request.amount} ${request.currency}, expires ${challenge.expires}, no-store, fresh id per request`;
    },
  },
  {
    id: 'acp.purchase',
    async run(ctx) {
      await requirePurchases(ctx);
      const { schemas } = await needs(ctx.acp, 'acp.discovery');
      const { item } = await firstOffer(ctx);
      const bought = await buyAcp(
        {
          baseUrl: ctx.base,
          item,
          email: ctx.options.email,
          psp: ctx.options.psp,
          paymentMethod: 'pm_card_visa',
        },
        () => {},
      );
      valid(schemas.completedSession, bought.answer, 'the completed session');
      return `bought ${item}: order ${(bought.order as Json).id}`;
    },
  },
  {
    id: 'ucp.purchase',
    async run(ctx) {
      await requirePurchases(ctx);
      const { schemas } = await needs(ctx.ucp, 'ucp.discovery');
      const { item } = await firstOffer(ctx);
      const bought = await buyUcp(
        {
          baseUrl: ctx.base,
          item,
          email: ctx.options.email,
          psp: ctx.options.psp,
          paymentMethod: 'pm_card_visa',
        },
        () => {},
      );
      valid(schemas.checkout, bought.answer, 'the completed checkout');
      return `bought ${item}: order ${(bought.order as Json).id}`;
    },
  },
  {
    id: 'mpp.purchase',
    async run(ctx) {
      await requirePurchases(ctx);
      const offer = await firstOffer(ctx);
      const body = JSON.stringify({ buyer: { email: ctx.options.email } });
      const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body };
      const method = {
        ...stripe.charge({
          paymentMethod: 'pm_card_visa',
          createToken: ({ amount, currency }) =>
            mintSandboxToken(ctx.options.psp, {
              amount: Number(amount),
              currency,
              paymentMethod: 'pm_card_visa',
            }),
        }),
        name: offer.method,
      };
      const mppx = Mppx.create({ methods: [method], polyfill: false });
      const challenged = await fetch(offer.url, init);
      expect(challenged.status === 402, `the unpaid request answered ${challenged.status}`);
      const credential = await mppx.createCredential(challenged);
      const paid = await fetch(offer.url, {
        ...init,
        headers: { ...init.headers, authorization: credential },
      });
      const result = (await paid.json()) as Json;
      expect(paid.status === 200, `the paid request answered ${paid.status}: ${JSON.stringify(result)}`);
      const receipt = Receipt.fromResponse(paid);
      expect(receipt.status === 'success', `the receipt says ${receipt.status}`);
      paidMpp.set(ctx, { offer, credential, orderId: result.order_id });
      return `bought ${offer.item}: order ${result.order_id}, receipt ${receipt.reference}`;
    },
  },
  {
    id: 'mpp.challenge.single-use',
    async run(ctx) {
      await requirePurchases(ctx);
      const paid = paidMpp.get(ctx);
      if (!paid) throw new Skip('needs mpp.purchase');
      const reused = await http('POST', paid.offer.url, {
        headers: { authorization: paid.credential },
        body: { buyer: { email: `other.${ctx.options.email}` } },
      });
      expect(
        reused.status === 402,
        `the paid challenge, reused for another purchase, answered ${reused.status}, not 402`,
      );
      expect(
        String(reused.json?.type).endsWith('/invalid-challenge'),
        `the reuse answered ${reused.json?.type}, not invalid-challenge`,
      );
      const challenge = Challenge.fromHeaders(reused.headers);
      const used = Credential.deserialize(paid.credential).challenge.id;
      expect(challenge.id !== used, 'the refusal offers the used challenge again');
      return `the challenge of order ${paid.orderId}, reused for another buyer: 402 invalid-challenge with a fresh challenge`;
    },
  },
];
