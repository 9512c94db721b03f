/** What the checks share: HTTP, the three discovery documents (read once) and the 402 probes. */
import { randomUUID } from 'node:crypto';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { Challenge } from 'mppx';
import type { PspSandbox } from '../agent/psp.ts';
import {
  type AcpSchemas,
  acpSchemas,
  knownAcpVersions,
  knownUcpVersions,
  type UcpSchemas,
  ucpSchemas,
  type Validate,
} from './schemas.ts';

export interface DoctorOptions {
  baseUrl: string;
  /** Buy once per protocol (and reuse a paid challenge), with sandbox tokens only. */
  allowPurchases: boolean;
  psp: PspSandbox;
  email: string;
}

/** The check cannot run; the reason is printed. */
export class Skip extends Error {}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: bodies are read as the deployment sends them
  json: any;
}

// biome-ignore lint/suspicious/noExplicitAny: documents are read as the deployment sends them
export type Json = any;

export async function http(
  method: string,
  url: string,
  init: { headers?: Record<string, string>; body?: unknown } = {},
): Promise<Answer> {
  const response = await fetchOrExplain(url, {
    method,
    redirect: 'manual',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    ...(init.body === undefined
      ? {}
      : { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** fetch, whose network failures name the request and their cause. */
async function fetchOrExplain(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause;
    throw new Error(`${init.method} ${url}: ${cause?.message ?? (error as Error).message}`);
  }
}

/** An Idempotency-Key of the doctor's own, long enough for every protocol. */
export const newKey = () => `doctor-${randomUUID()}`;

const once = <T>(load: () => Promise<T>) => {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load();
    return loaded;
  };
};

export interface MppOffer {
  item: string;
  path: string;
  url: string;
  amount: string;
  currency: string;
  method: string;
}

export interface Probe {
  answer: Answer;
  challenge: ReturnType<typeof Challenge.fromHeaders>;
}

export function createContext(options: DoctorOptions) {
  const base = options.baseUrl;

  const acp = once(async () => {
    const answer = await http('GET', `${base}/.well-known/acp.json`);
    if (answer.status !== 200 || answer.json === undefined)
      throw new Error(`GET /.well-known/acp.json answered ${answer.status}`);
    const version: string = answer.json.protocol?.version;
    const schemas = acpSchemas(version);
    if (!schemas)
      throw new Error(
        `ACP ${version}: no vendored schemas (the doctor knows ${knownAcpVersions().join(', ')})`,
      );
    return {
      answer,
      doc: answer.json as Json,
      version,
      schemas: schemas as AcpSchemas,
      api: String(answer.json.api_base_url),
    };
  });

  const ucp = once(async () => {
    const answer = await http('GET', `${base}/.well-known/ucp`);
    if (answer.status !== 200 || answer.json === undefined)
      throw new Error(`GET /.well-known/ucp answered ${answer.status}`);
    const version: string = answer.json.ucp?.version;
    const schemas = ucpSchemas(version);
    if (!schemas)
      throw new Error(
        `UCP ${version}: no vendored schemas (the doctor knows ${knownUcpVersions().join(', ')})`,
      );
    const rest = (answer.json.ucp.services?.['dev.ucp.shopping'] ?? []).find(
      (s: Json) => s.transport === 'rest',
    );
    if (!rest?.endpoint) throw new Error('the profile names no REST endpoint of dev.ucp.shopping');
    const agent = `profile="https://doctor.example/.well-known/ucp"; version="${version}"`;
    return {
      answer,
      doc: answer.json as Json,
      version,
      schemas: schemas as UcpSchemas,
      endpoint: String(rest.endpoint),
      agent,
    };
  });

  const mpp = once(async () => {
    const answer = await http('GET', `${base}/openapi.json`);
    if (answer.status !== 200 || answer.json === undefined)
      throw new Error(`GET /openapi.json answered ${answer.status}`);
    const doc: Json = answer.json;
    const server = String(doc.servers?.[0]?.url ?? base);
    const offers: MppOffer[] = Object.entries<Json>(doc.paths ?? {}).flatMap(([path, item]) => {
      const offer = item.post?.['x-payment-info']?.offers?.[0];
      if (!offer) return [];
      return [
        {
          item: path.split('/').at(-1) ?? path,
          path,
          url: `${server}${path}`,
          amount: offer.amount,
          currency: offer.currency,
          method: offer.method,
        },
      ];
    });
    if (offers.length === 0) throw new Error('the document prices no operation (x-payment-info)');
    // The document's own schemas, so bodies are checked against what it promises.
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats.default(ajv);
    ajv.addSchema({ ...doc, $id: 'urn:doctor:mpp-openapi' });
    const declared = (offer: MppOffer, status: number): Validate => {
      const content = doc.paths[offer.path].post.responses?.[status]?.content ?? {};
      const schema = Object.values<Json>(content)[0]?.schema;
      if (!schema) return () => `the document declares no body for ${status}`;
      const validate = ajv.compile({ $ref: `urn:doctor:mpp-openapi${schema.$ref ?? ''}` });
      return (body) =>
        validate(body)
          ? undefined
          : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
    };
    return { answer, doc, offers, declared };
  });

  /** The 402 each priced operation answers without a credential, once per item. */
  const probes = new Map<string, Promise<Probe>>();
  const probe = (offer: MppOffer) => {
    let probed = probes.get(offer.item);
    if (!probed) {
      probed = probeChallenge(offer, options.email);
      probes.set(offer.item, probed);
    }
    return probed;
  };

  return {
    options,
    base,
    acp,
    ucp,
    mpp,
    probe,
    probeChallenge: (offer: MppOffer) => probeChallenge(offer, options.email),
  };
}

export type Context = ReturnType<typeof createContext>;

/** POST to a priced operation without a credential: the 402 and its parsed challenge. */
async function probeChallenge(offer: MppOffer, email: string): Promise<Probe> {
  const answer = await http('POST', offer.url, { body: { buyer: { email } } });
  if (answer.status !== 402)
    throw new Error(`POST ${offer.path} without a credential answered ${answer.status}, not 402`);
  try {
    return { answer, challenge: Challenge.fromHeaders(answer.headers) };
  } catch (error) {
    throw new Error(
      `POST ${offer.path}: mppx cannot read the WWW-Authenticate challenge: ${(error as Error).message}`,
    );
  }
}

/** Runs `load`; a failure becomes a Skip naming the check that reports it. */
export async function needs<T>(load: () => Promise<T>, check: string): Promise<T> {
  try {
    return await load();
  } catch {
    throw new Skip(`needs ${check}`);
  }
}
