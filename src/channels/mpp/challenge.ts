import { createHmac, randomBytes } from 'node:crypto';
import type { CatalogItem } from '../../catalog/index.ts';
import { MINUTE_MS } from '../../shared/clock.ts';
import { canonicalJson } from '../../shared/jcs.ts';

export const PAYMENT_METHOD = 'psp';
export const PAYMENT_INTENT = 'charge';
export const CHALLENGE_LIFETIME_MS = 15 * MINUTE_MS;
/** draft-httpauth-payment asks for an HMAC key of at least 32 bytes. */
export const MIN_SECRET_BYTES = 32;

/** The field a credential travels in unless the challenge names another. */
export const DEFAULT_CREDENTIAL_FIELD = 'Authorization';
/**
 * The field a challenge names with `header=` when the agent keeps `Authorization` for its own
 * credentials (draft-httpauth-payment-01; mppx's `requiresAuth`).
 */
export const PAYMENT_AUTHORIZATION = 'Payment-Authorization';

/** The parameters the challenge id is bound to (draft-httpauth-payment-01 §Challenge Binding). */
export interface ChallengeSlots {
  realm: string;
  method: string;
  intent: string;
  /** base64url of the JCS-encoded request, exactly as on the wire. */
  request: string;
  expires?: string;
  digest?: string;
  opaque?: string;
  /** The field the credential must be sent in; absent means `Authorization`. */
  header?: string;
}

export interface Challenge extends ChallengeSlots {
  id: string;
  description: string;
  expires: string;
}

/** What one paid route asks for; fixed per item, so every challenge for it looks alike but its id and expiry. */
export interface PaidRoute {
  itemId: string;
  realm: string;
  request: string;
  description: string;
}

/**
 * `base64url(HMAC-SHA256(secret, realm|method|intent|request|expires|digest[|header]|opaque))`:
 * fixed slots, absent ones empty, so no optional parameter (such as `expires`) can be stripped
 * unnoticed. A `header` other than `Authorization` takes a slot before `opaque`, exactly where the
 * mppx client puts it (`Challenge.js` `idBindingInput`), so the ids of challenges without one
 * are unchanged.
 */
export function challengeId(secret: string, slots: ChallengeSlots): string {
  const header = namesDefaultField(slots.header) ? [] : [slots.header];
  const input = [
    slots.realm,
    slots.method,
    slots.intent,
    slots.request,
    slots.expires ?? '',
    slots.digest ?? '',
    ...header,
    slots.opaque ?? '',
  ].join('|');
  return createHmac('sha256', secret).update(input, 'utf8').digest('base64url');
}

/** Whether a challenge's `header` leaves the credential in `Authorization`. */
export function namesDefaultField(header: string | undefined): header is undefined {
  return header === undefined || header.toLowerCase() === DEFAULT_CREDENTIAL_FIELD.toLowerCase();
}

/** base64url (no padding) of the JCS encoding: the form of `request` and `opaque` on the wire. */
export function base64urlJcs(request: object): string {
  return Buffer.from(canonicalJson(request), 'utf8').toString('base64url');
}

/** The `psp` charge request of an item: its catalog price and where the token must be scoped. */
export function paidRouteFor(item: CatalogItem, terms: { realm: string; networkId: string }): PaidRoute {
  return {
    itemId: item.id,
    realm: terms.realm,
    request: base64urlJcs({
      amount: String(item.price.amount),
      currency: item.price.currency,
      methodDetails: { networkId: terms.networkId, paymentMethodTypes: ['card'] },
    }),
    description: item.description,
  };
}

/**
 * A challenge for `route`, valid 15 minutes. Its `opaque` nonce makes every challenge unique: the
 * other parameters are the same for all buyers of an item, and a challenge pays for one purchase
 * only, so two buyers served in the same millisecond must not receive the same id.
 */
export function issueChallenge(
  route: PaidRoute,
  secret: string,
  now: Date,
  credentialField: string = DEFAULT_CREDENTIAL_FIELD,
): Challenge {
  const slots = {
    realm: route.realm,
    method: PAYMENT_METHOD,
    intent: PAYMENT_INTENT,
    request: route.request,
    expires: new Date(now.getTime() + CHALLENGE_LIFETIME_MS).toISOString(),
    ...(namesDefaultField(credentialField) ? {} : { header: credentialField }),
    opaque: base64urlJcs({ nonce: randomBytes(16).toString('base64url') }),
  };
  return { ...slots, id: challengeId(secret, slots), description: route.description };
}

/** The `WWW-Authenticate` value, parameters in the order the reference SDK writes them (`header` before `opaque`). */
export function formatChallenge(challenge: Challenge): string {
  const params: [string, string][] = [
    ['id', challenge.id],
    ['realm', challenge.realm],
    ['method', challenge.method],
    ['intent', challenge.intent],
    ['request', challenge.request],
    ['description', challenge.description],
    ['expires', challenge.expires],
  ];
  if (challenge.header !== undefined) params.push(['header', challenge.header]);
  if (challenge.opaque !== undefined) params.push(['opaque', challenge.opaque]);
  return `Payment ${params.map(([name, value]) => `${name}=${quoted(value)}`).join(', ')}`;
}

/** RFC 9110 quoted-string; characters a header cannot carry are written as \uXXXX, as mppx does. */
function quoted(value: string): string {
  const escaped = value
    .replace(/[\\"]/g, (ch) => `\\${ch}`)
    .replace(/[^\x20-\x7e]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `"${escaped}"`;
}
