import type { IncomingHttpHeaders } from 'node:http';
import { Compile } from 'typebox/compile';
import { constantTimeEqual } from '../../shared/ids.ts';
import {
  challengeId,
  DEFAULT_CREDENTIAL_FIELD,
  namesDefaultField,
  PAYMENT_AUTHORIZATION,
  PAYMENT_INTENT,
  PAYMENT_METHOD,
  type PaidRoute,
} from './challenge.ts';
import { PaymentCredential, PspPayload } from './schemas.ts';

export type CredentialReading =
  | { kind: 'absent' }
  | { kind: 'malformed' }
  | { kind: 'present'; credential: PaymentCredential };

export type ChallengeCheck =
  | { ok: true; challengeId: string; expiresAt: Date }
  | { ok: false; detail: string };

const credentialShape = Compile(PaymentCredential);
const pspPayloadShape = Compile(PspPayload);
/** Base64url as the draft asks, but also padded or standard base64 as the reference SDK accepts. */
const PAYMENT_CREDENTIAL = /^Payment +([A-Za-z0-9_\-+/]+={0,2})$/i;

/** The field a credential arrived in and its value (undefined when the request carries none). */
export interface CredentialSource {
  field: string;
  value: string | undefined;
}

export type SourceReading =
  | { ok: true; source: CredentialSource; challengeField: string }
  | { ok: false; detail: string };

const PAYMENT_SCHEME = /^\s*payment(\s|$)/i;

/**
 * Where this request's credential is, and which field its next challenge should name:
 * `Payment-Authorization` when the agent sent it there or keeps `Authorization` for a credential
 * of another scheme (draft-httpauth-payment-01 `header`), else `Authorization`. A Payment
 * credential in both fields is ambiguous and refused.
 */
export function credentialSource(headers: IncomingHttpHeaders): SourceReading {
  const dedicated = headerText(headers['payment-authorization']);
  const general = headerText(headers.authorization);
  const generalIsPayment = general !== undefined && PAYMENT_SCHEME.test(general);
  if (dedicated !== undefined && generalIsPayment) {
    return { ok: false, detail: 'Send one Payment credential, in the field the challenge names, not two.' };
  }
  if (dedicated !== undefined) {
    return {
      ok: true,
      source: { field: PAYMENT_AUTHORIZATION, value: dedicated },
      challengeField: PAYMENT_AUTHORIZATION,
    };
  }
  const challengeField =
    general === undefined || generalIsPayment ? DEFAULT_CREDENTIAL_FIELD : PAYMENT_AUTHORIZATION;
  return { ok: true, source: { field: DEFAULT_CREDENTIAL_FIELD, value: general }, challengeField };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

/**
 * Reads `Authorization: Payment <base64url JSON>` (or the same in `Payment-Authorization`). Another scheme (Bearer, ...) is not a payment
 * credential at all, so the request is treated as unpaid rather than malformed.
 */
export function readCredential(authorization: string | undefined): CredentialReading {
  const value = authorization?.trim();
  if (!value || !/^payment(\s|$)/i.test(value)) return { kind: 'absent' };
  const encoded = PAYMENT_CREDENTIAL.exec(value)?.[1];
  if (encoded === undefined) return { kind: 'malformed' };
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
  } catch {
    return { kind: 'malformed' };
  }
  return credentialShape.Check(decoded) ? { kind: 'present', credential: decoded } : { kind: 'malformed' };
}

/**
 * Checks, in this order, that we issued the echoed challenge (HMAC over every bound parameter,
 * constant time, so any echoed parameter that differs is refused), that it is for this route
 * (realm, method, intent and the exact request, hence amount and currency), that the credential
 * came in the field the challenge names, and that it carries an expiry. Whether it has expired is
 * the caller's question: a claimed challenge may be repeated after expiry.
 */
export function verifyChallenge(
  echo: PaymentCredential['challenge'],
  route: PaidRoute,
  secret: string,
  field: string = DEFAULT_CREDENTIAL_FIELD,
): ChallengeCheck {
  if (!constantTimeEqual(challengeId(secret, echo), echo.id)) {
    return { ok: false, detail: 'This challenge was not issued by this server, or it was altered.' };
  }
  const sameRoute =
    echo.realm === route.realm &&
    echo.method === PAYMENT_METHOD &&
    echo.intent === PAYMENT_INTENT &&
    echo.request === route.request;
  if (!sameRoute) {
    return { ok: false, detail: 'This challenge was issued for another item or price.' };
  }
  const named = namesDefaultField(echo.header) ? DEFAULT_CREDENTIAL_FIELD : echo.header;
  if (named.toLowerCase() !== field.toLowerCase()) {
    return { ok: false, detail: `This challenge asks for the credential in the ${named} field.` };
  }
  const expiresAt = new Date(echo.expires ?? Number.NaN);
  if (Number.isNaN(expiresAt.getTime())) {
    return { ok: false, detail: 'This challenge has no valid expiry.' };
  }
  return { ok: true, challengeId: echo.id, expiresAt };
}

/** The shared payment token of a `psp` payload, or undefined when the payload is not one. */
export function sharedPaymentToken(payload: unknown): string | undefined {
  return pspPayloadShape.Check(payload) ? payload.spt : undefined;
}
