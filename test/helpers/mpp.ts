import type { TestContext } from 'node:test';
import { Challenge, Credential } from 'mppx';
import { MPP_PREFIX } from '../../src/channels/mpp/operations.ts';
import type { PaymentProblem, PurchaseResult, ServiceProblem } from '../../src/channels/mpp/schemas.ts';
import { type PurchaseFixture, startPurchaseFixture } from './purchase.ts';

export const BUYER = { buyer: { email: 'agent.buyer@example.com', full_name: 'Ada Agent' } };

export interface MppFixture extends PurchaseFixture {
  /** The service listening on a real socket. */
  url: string;
  buy(itemId: string, init?: { authorization?: string; body?: unknown }): Promise<Response>;
}

/** The purchase fixture (sandbox PSP, real SMTP, manual clock) with the service on a real socket. */
export async function startMppFixture(
  t: TestContext,
  options: Parameters<typeof startPurchaseFixture>[1] = {},
): Promise<MppFixture> {
  const fixture = await startPurchaseFixture(t, options);
  const url = await fixture.runtime.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    ...fixture,
    url,
    buy: (itemId, init = {}) =>
      fetch(`${url}${MPP_PREFIX}/plans/${itemId}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(init.authorization ? { authorization: init.authorization } : {}),
        },
        body: JSON.stringify(init.body ?? BUYER),
      }),
  };
}

/** The Authorization value paying the challenge of a 402 response with `spt`, built by mppx. */
export function payingCredential(response: Response, spt: string): string {
  const challenge = Challenge.fromResponse(response);
  return Credential.serialize(Credential.from({ challenge, payload: { spt } }));
}

/** A credential JSON encoded the way the draft says, for hand-made (and hand-broken) credentials. */
export function encodeCredential(credential: unknown): string {
  return `Payment ${Buffer.from(JSON.stringify(credential)).toString('base64url')}`;
}

/** The auth-params of a `WWW-Authenticate: Payment` value, as the strings on the wire. */
export function challengeParams(header: string): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [, name, value] of header.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
    if (name !== undefined && value !== undefined) params[name] = value.replace(/\\(.)/g, '$1');
  }
  return params;
}

/** Typed reads of the channel's response bodies. */
export const readResult = async (response: Response) => (await response.json()) as PurchaseResult;
export const readPaymentProblem = async (response: Response) => (await response.json()) as PaymentProblem;
export const readProblem = async (response: Response) => (await response.json()) as ServiceProblem;

export function decodeBase64urlJson(value: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
}
