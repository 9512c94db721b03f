import type { Db } from '../../db/schema.ts';
import { err, ok, type Result } from '../../shared/result.ts';
import type { Jwk } from '../../signing/index.ts';

export interface UcpPlatform {
  profileUrl: string;
  keys: Jwk[];
  orderWebhookUrl: string | null;
}

/** JWK members that only a private key has (RFC 7518): a profile must never publish them. */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/** Reads a platform's public keys: a JWK Set (`{"keys": [...]}`), a profile (its `keys`), or a bare array. */
export function parsePlatformKeys(text: string): Result<Jwk[], string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return err('the keys are not JSON');
  }
  const list = Array.isArray(parsed)
    ? parsed
    : typeof parsed === 'object' && parsed !== null && 'keys' in parsed
      ? parsed.keys
      : undefined;
  if (!Array.isArray(list) || list.length === 0)
    return err('no keys: give a JWK Set, a UCP profile with keys, or an array of JWKs');
  for (const key of list) {
    if (
      typeof key !== 'object' ||
      key === null ||
      typeof key.kid !== 'string' ||
      typeof key.kty !== 'string'
    ) {
      return err('every key needs a kid and a kty');
    }
    const secret = PRIVATE_MEMBERS.find((member) => member in key);
    if (secret) return err(`key ${key.kid} holds the private member "${secret}"; give public keys only`);
  }
  return ok(list as Jwk[]);
}

function checkUrl(value: string, what: string): Result<string, string> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return err(`${what} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return err(`${what} must be an https URL`);
  return ok(url.toString());
}

/** Adds a platform, or replaces the keys and webhook URL of one already registered. */
export async function registerPlatform(
  db: Db,
  input: { profileUrl: string; keys: Jwk[]; orderWebhookUrl?: string | undefined },
  now: Date,
): Promise<Result<UcpPlatform, string>> {
  const profile = checkUrl(input.profileUrl, 'the profile URL');
  if (!profile.ok) return profile;
  const webhook =
    input.orderWebhookUrl === undefined ? ok(null) : checkUrl(input.orderWebhookUrl, 'the webhook URL');
  if (!webhook.ok) return webhook;
  const at = now.getTime();
  const row = { keys: JSON.stringify(input.keys), order_webhook_url: webhook.value, updated_at: at };
  await db
    .insertInto('ucp_platforms')
    .values({ profile_url: profile.value, created_at: at, ...row })
    .onConflict((oc) => oc.column('profile_url').doUpdateSet(row))
    .execute();
  return ok({ profileUrl: profile.value, keys: input.keys, orderWebhookUrl: webhook.value });
}

export async function findPlatform(db: Db, profileUrl: string): Promise<UcpPlatform | undefined> {
  let normalized: string;
  try {
    normalized = new URL(profileUrl).toString();
  } catch {
    return undefined;
  }
  const row = await db
    .selectFrom('ucp_platforms')
    .selectAll()
    .where('profile_url', '=', normalized)
    .executeTakeFirst();
  return (
    row && {
      profileUrl: row.profile_url,
      keys: JSON.parse(row.keys) as Jwk[],
      orderWebhookUrl: row.order_webhook_url,
    }
  );
}

export async function listPlatforms(db: Db): Promise<UcpPlatform[]> {
  const rows = await db.selectFrom('ucp_platforms').selectAll().orderBy('profile_url').execute();
  return rows.map((row) => ({
    profileUrl: row.profile_url,
    keys: JSON.parse(row.keys) as Jwk[],
    orderWebhookUrl: row.order_webhook_url,
  }));
}

export async function removePlatform(db: Db, profileUrl: string): Promise<boolean> {
  const result = await db
    .deleteFrom('ucp_platforms')
    .where('profile_url', '=', profileUrl)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}
