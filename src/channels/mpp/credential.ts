import { Compile } from 'typebox/compile';
import { constantTimeEqual } from '../../shared/ids.ts';
import { challengeId, PAYMENT_INTENT, PAYMENT_METHOD, type PaidRoute } from './challenge.ts';
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

/**
 * Reads `Authorization: Payment <base64url JSON>`. Another scheme (Bearer, ...) is not a payment
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
 * Checks, in this order, that we issued the echoed challenge (HMAC, constant time), that it is for
 * this route (realm, method, intent and the exact request, hence amount and currency), and that it
 * carries an expiry. Whether it has expired is the caller's question: a claimed challenge may be
 * repeated after expiry.
 */
export function verifyChallenge(
  echo: PaymentCredential['challenge'],
  route: PaidRoute,
  secret: string,
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
  const expiresAt = new Date(echo.expires ?? Number.NaN);
  if (Number.isNaN(expiresAt.getTime())) {
    return { ok: false, detail: 'This challenge has no valid expiry.' };
  }
  return { ok: true, challengeId: echo.id, expiresAt };
}

/** The shared payment token of a `psp` payload, or undefined when the payload is not one. */
export function sharedPaymentToken(payload: object): string | undefined {
  return pspPayloadShape.Check(payload) ? payload.spt : undefined;
}
