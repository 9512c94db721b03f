import { createHmac, randomBytes } from 'node:crypto';

/** Standard Webhooks symmetric secrets: `whsec_` + base64 of the key bytes. */
export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

export function newSigningSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}` under the secret's key bytes. */
export function sign(secret: string, messageId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${messageId}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** The `webhook-signature` header: one signature per secret, space-separated, in the order given. */
export function signatureHeader(
  secrets: readonly string[],
  messageId: string,
  timestampSeconds: number,
  body: string,
): string {
  return secrets.map((secret) => sign(secret, messageId, timestampSeconds, body)).join(' ');
}

/** The secrets that sign at `at`: the current one, then the previous one while its grace period lasts. */
export function signingSecrets(
  subscription: { secret: string; previous_secret: string | null; previous_secret_expires_at: number | null },
  at: Date,
): string[] {
  const { secret, previous_secret: previous, previous_secret_expires_at: expiresAt } = subscription;
  return previous !== null && expiresAt !== null && at.getTime() < expiresAt ? [secret, previous] : [secret];
}
