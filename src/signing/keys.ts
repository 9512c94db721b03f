import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';

/** A public signing key as the UCP profile publishes it (RFC 7517; ES256 on P-256). */
export interface PublicJwk {
  kid: string;
  kty: 'EC';
  crv: 'P-256';
  x: string;
  y: string;
  use: 'sig';
  alg: 'ES256';
}

export interface SigningKey {
  kid: string;
  privateKey: KeyObject;
}

export interface SigningKeyRecord {
  kid: string;
  createdAt: Date;
  retiredAt: Date | null;
  publishUntil: Date | null;
}

export interface KeyStoreOptions {
  clock: Clock;
  /** SIGNING_KEYS_SECRET: private keys are sealed under it in the database. */
  secret: string | undefined;
  /** How long an instance reuses what it read (a rotation elsewhere shows within this). */
  cacheMs?: number;
}

/** The keys this service signs with and publishes, read from the database and kept briefly. */
export interface KeyStore {
  /** The key that signs now; the first ever is generated on demand. */
  signingKey(): Promise<SigningKey>;
  /** Every key a verifier may still meet: the signing key and retired ones within their grace. */
  publishedKeys(): Promise<PublicJwk[]>;
  /** `rotateSigningKey`, then this instance signs with the new key at once. */
  rotate(graceMs: number): Promise<{ kid: string; retired: string[] }>;
}

const DEFAULT_CACHE_MS = 10_000;

export function createKeyStore(db: Db, options: KeyStoreOptions): KeyStore {
  const cacheMs = options.cacheMs ?? DEFAULT_CACHE_MS;
  let signing: { key: SigningKey; until: number } | undefined;
  let published: { keys: PublicJwk[]; until: number; graceEnds: number } | undefined;
  const store: KeyStore = {
    async signingKey() {
      const now = Date.now();
      if (signing && signing.until > now) return signing.key;
      const row =
        (await newestActiveKey(db)) ?? (await insertKey(db, options, options.clock.now().getTime()));
      signing = {
        key: { kid: row.kid, privateKey: openPrivateKey(row.private_key, options.secret) },
        until: now + cacheMs,
      };
      return signing.key;
    },
    async publishedKeys() {
      const now = Date.now();
      const at = options.clock.now().getTime();
      if (published && published.until > now && published.graceEnds > at) return published.keys;
      // The profile never goes out without the key that signs.
      await store.signingKey();
      const rows = await db
        .selectFrom('signing_keys')
        .select(['public_jwk', 'publish_until'])
        .where((eb) => eb.or([eb('publish_until', 'is', null), eb('publish_until', '>', at)]))
        .orderBy('created_at', 'desc')
        .orderBy('kid', 'desc')
        .execute();
      published = {
        keys: rows.map((row) => JSON.parse(row.public_jwk) as PublicJwk),
        until: now + cacheMs,
        // A key whose grace ends drops out at once, whatever is left of the cache.
        graceEnds: Math.min(...rows.map((row) => row.publish_until ?? Number.POSITIVE_INFINITY)),
      };
      return published.keys;
    },
    async rotate(graceMs) {
      const rotated = await rotateSigningKey(db, {
        secret: options.secret,
        now: options.clock.now(),
        graceMs,
      });
      signing = undefined;
      published = undefined;
      return rotated;
    },
  };
  return store;
}

function newestActiveKey(db: Db) {
  return db
    .selectFrom('signing_keys')
    .selectAll()
    .where('retired_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('kid', 'desc')
    .executeTakeFirst();
}

async function insertKey(db: Db, options: Pick<KeyStoreOptions, 'secret'>, now: number) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const kid = `svc_${new Date(now).toISOString().slice(0, 10).replaceAll('-', '')}_${randomBytes(4).toString('hex')}`;
  const { x, y } = publicKey.export({ format: 'jwk' });
  if (!x || !y) throw new Error('a generated P-256 key has no coordinates');
  const jwk: PublicJwk = { kid, kty: 'EC', crv: 'P-256', x, y, use: 'sig', alg: 'ES256' };
  const row = {
    kid,
    public_jwk: JSON.stringify(jwk),
    private_key: sealPrivateKey(
      privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
      options.secret,
    ),
    created_at: now,
    retired_at: null,
    publish_until: null,
  };
  await db.insertInto('signing_keys').values(row).execute();
  return row;
}

/**
 * A new key signs from now on; the keys it replaces stay published for `graceMs` (UCP asks at
 * least 7 days), so what they signed still verifies, then drop out of the profile.
 */
export async function rotateSigningKey(
  db: Db,
  options: { secret: string | undefined; now: Date; graceMs: number },
): Promise<{ kid: string; retired: string[] }> {
  const now = options.now.getTime();
  return db.transaction().execute(async (trx) => {
    const retiring = await trx
      .selectFrom('signing_keys')
      .select('kid')
      .where('retired_at', 'is', null)
      .execute();
    await trx
      .updateTable('signing_keys')
      .set({ retired_at: now, publish_until: now + options.graceMs })
      .where('retired_at', 'is', null)
      .execute();
    const created = await insertKey(trx, options, now);
    return { kid: created.kid, retired: retiring.map((row) => row.kid) };
  });
}

/** Every key, newest first, for operators. */
export async function listSigningKeys(db: Db): Promise<SigningKeyRecord[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .select(['kid', 'created_at', 'retired_at', 'publish_until'])
    .orderBy('created_at', 'desc')
    .orderBy('kid', 'desc')
    .execute();
  const at = (value: number | null) => (value === null ? null : new Date(value));
  return rows.map((row) => ({
    kid: row.kid,
    createdAt: new Date(row.created_at),
    retiredAt: at(row.retired_at),
    publishUntil: at(row.publish_until),
  }));
}

const SEALED = 'aes256gcm';
const PLAIN = 'pem';

function sealingKey(secret: string): Buffer {
  return createHash('sha256').update(`svc-signing-keys\0${secret}`).digest();
}

/** Sealed (AES-256-GCM) under SIGNING_KEYS_SECRET when set; a development database keeps the PEM. */
function sealPrivateKey(pem: string, secret: string | undefined): string {
  if (secret === undefined) return `${PLAIN}.${Buffer.from(pem).toString('base64url')}`;
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secret), iv);
  const data = Buffer.concat([cipher.update(pem, 'utf8'), cipher.final()]);
  return [SEALED, iv, cipher.getAuthTag(), data]
    .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
    .join('.');
}

function openPrivateKey(stored: string, secret: string | undefined): KeyObject {
  const [kind, ...parts] = stored.split('.');
  if (kind === PLAIN && parts[0] !== undefined)
    return createPrivateKey(Buffer.from(parts[0], 'base64url').toString());
  const [iv, tag, data] = parts.map((part) => Buffer.from(part, 'base64url'));
  if (kind !== SEALED || !iv || !tag || !data) throw new Error('a stored signing key is corrupt');
  if (secret === undefined) {
    throw new Error(
      'the signing keys are sealed; set SIGNING_KEYS_SECRET to the secret they were sealed with',
    );
  }
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(secret), iv);
  decipher.setAuthTag(tag);
  return createPrivateKey(Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8'));
}
