import { createCipheriv, createDecipheriv, createHash, createSecretKey } from 'node:crypto';
import type { ExpressionBuilder } from 'kysely';
import { type Param, preparedQuery } from '../db/prepared.ts';
import type { Database, Db } from '../db/schema.ts';
import { type InstanceLiveness, isInstanceGone } from '../instances/index.ts';
import { type Clock, HOUR_MS } from '../shared/clock.ts';
import { secureRandomBytes, sha256Hex } from '../shared/ids.ts';
import { canonicalJson } from '../shared/jcs.ts';
import type { IdempotencyKeysTable } from './idempotency.table.ts';

export const KEY_RETENTION_MS = 24 * HOUR_MS;
/** How often one request looks again at a key that changed under it before answering "in flight". */
const MAX_CLAIM_ROUNDS = 3;
export const MIN_KEY_LENGTH = 16;
export const MAX_KEY_LENGTH = 255;

export interface IdempotencyDeps {
  db: Db;
  clock: Clock;
  /** How long an in-flight key's holder has before a retry may take the key over. */
  staleAfterMs: number;
  /** This instance, named on the keys it holds; a gone holder's key is taken over at once. */
  instance?: InstanceLiveness;
}

export interface StoredResponse {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** False for a "retry later" answer: kept, it would be replayed to the very retry it asks for. */
  keep?: boolean;
}

export interface IdempotentRequest {
  scope: string;
  key: string;
  /** The parsed request body (undefined or null for none). */
  body: unknown;
}

export type IdempotencyOutcome =
  | { kind: 'fresh'; response: StoredResponse }
  | { kind: 'replayed'; response: StoredResponse }
  /** Same key, different body: the client reused a key for another request. */
  | { kind: 'conflict' }
  /** Same key, the first request is still running. */
  | { kind: 'in_flight'; retryAfterSeconds: number };

export type KeyProblem = 'missing' | 'too_short' | 'too_long';

export function checkIdempotencyKey(key: string | undefined): KeyProblem | undefined {
  if (key === undefined || key === '') return 'missing';
  if (key.length < MIN_KEY_LENGTH) return 'too_short';
  if (key.length > MAX_KEY_LENGTH) return 'too_long';
  return undefined;
}

export function fingerprintOf(body: unknown): string {
  return sha256Hex(body === undefined || body === null ? '' : canonicalJson(body));
}

/**
 * Runs `handle` at most once per (scope, key): the key is claimed in the database before the
 * handler runs, so concurrent requests and other instances see it in flight. The response is kept
 * 24 hours and replayed for the same body; 5xx responses, "retry later" answers (`keep: false`)
 * and thrown errors release the key so a retry runs afresh. A key held longer than `staleAfterMs`,
 * or held by an instance known gone, is taken over by the next retry; the holder's own writes are
 * fenced by the lease it set, so a slow holder that was taken over neither overwrites nor
 * releases the key.
 */
export async function runIdempotently(
  deps: IdempotencyDeps,
  request: IdempotentRequest,
  handle: () => Promise<StoredResponse>,
): Promise<IdempotencyOutcome> {
  const { db } = deps;
  const acquired = await acquire(deps, request, fingerprintOf(request.body));
  if (acquired.kind !== 'held') return acquired;
  const holder: Holder = { ...request, lease: acquired.lease };

  let response: StoredResponse;
  try {
    response = await handle();
  } catch (error) {
    await release(db, holder);
    throw error;
  }
  if (response.status >= 500 || response.keep === false) {
    await release(db, holder);
  } else {
    const sealed = sealerFor(request);
    await sealKey(db, {
      ...heldKey(holder),
      status: response.status,
      body: sealed.seal(JSON.stringify(response.body ?? null)),
      headers: response.headers ? sealed.seal(JSON.stringify(response.headers)) : null,
    });
  }
  return { kind: 'fresh', response };
}

type Acquired = IdempotencyOutcome | { kind: 'held'; lease: number };

/**
 * Claims the key, or reports what holds it. The key can change between reading and writing
 * (released, completed, taken over by another retry), so this looks again, a bounded number of
 * times; a key that keeps changing is answered "in flight, retry in a second".
 */
async function acquire(
  deps: IdempotencyDeps,
  request: IdempotentRequest,
  fingerprint: string,
): Promise<Acquired> {
  const { db, clock, staleAfterMs, instance } = deps;
  const holder = instance?.id ?? null;
  for (let round = 0; round < MAX_CLAIM_ROUNDS; round++) {
    const now = clock.now().getTime();
    let lease = now + staleAfterMs;
    if (await claim(db, request, fingerprint, { now, lease, holder })) return { kind: 'held', lease };
    const existing = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('scope', '=', request.scope)
      .where('key', '=', sha256Hex(request.key))
      .executeTakeFirst();
    if (!existing) continue;
    if (existing.fingerprint !== fingerprint) return { kind: 'conflict' };
    if (existing.state === 'completed' && existing.response_status !== null) {
      return { kind: 'replayed', response: openResponse(request, existing.response_status, existing) };
    }
    const heldUntil = existing.locked_until ?? now;
    if (heldUntil > now) {
      if (!instance || !(await isInstanceGone(db, existing.locked_by, instance.goneAfterMs))) {
        return {
          kind: 'in_flight',
          retryAfterSeconds: retryAfter(existing.locked_by, heldUntil - now, instance),
        };
      }
      // Taken over before its end, the new lease must still be later to fence the old holder.
      lease = Math.max(lease, heldUntil + 1);
    }
    if (await takeOverStale(db, request, existing.locked_until, { lease, holder }))
      return { kind: 'held', lease };
  }
  return { kind: 'in_flight', retryAfterSeconds: 1 };
}

/** A holder that names its instance is looked at again soon: it may be known gone by then. */
function retryAfter(
  holder: string | null,
  remainingMs: number,
  instance: InstanceLiveness | undefined,
): number {
  const untilLapse = Math.ceil(remainingMs / 1000);
  if (holder === null || !instance) return untilLapse;
  return Math.max(1, Math.min(untilLapse, Math.ceil(instance.goneAfterMs / 1000)));
}

function openResponse(
  request: IdempotentRequest,
  status: number,
  row: Pick<IdempotencyKeysTable, 'response_body' | 'response_headers'>,
): StoredResponse {
  const sealed = sealerFor(request);
  return {
    status,
    body: row.response_body === null ? null : JSON.parse(sealed.open(row.response_body)),
    headers: row.response_headers ? JSON.parse(sealed.open(row.response_headers)) : undefined,
  };
}

/**
 * Kept responses can hold secrets (a create answer carries the new session id), so they are
 * encrypted (AES-256-GCM) under a key derived from the Idempotency-Key, which only the client
 * holds: the table stores the key's hash, and a copy of the database alone cannot read them. A
 * key object, not bytes: given bytes, each cipher first tries them as a key object and catches the
 * error, which cost more than the encryption.
 */
function sealerFor(request: IdempotentRequest) {
  const key = createSecretKey(
    createHash('sha256').update(`svc-idempotency\0${request.scope}\0${request.key}`).digest(),
  );
  return {
    seal(plain: string): string {
      const iv = secureRandomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return [iv, cipher.getAuthTag(), data].map((part) => part.toString('base64url')).join('.');
    },
    open(sealed: string): string {
      const [iv, tag, data] = sealed.split('.').map((part) => Buffer.from(part, 'base64url'));
      if (!iv || !tag || !data) throw new Error('a kept idempotent response is corrupt');
      const decipher = createDecipheriv('aes-256-gcm', key, iv);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8');
    },
  };
}

async function claim(
  db: Db,
  request: IdempotentRequest,
  fingerprint: string,
  at: { now: number; lease: number; holder: string | null },
): Promise<boolean> {
  const { now, lease, holder } = at;
  const result = await claimKey(db, {
    scope: request.scope,
    key: sha256Hex(request.key),
    fingerprint,
    lease,
    holder,
    now,
    expiresAt: now + KEY_RETENTION_MS,
  });
  return (result.numAffectedRows ?? 0n) > 0n;
}

type ClaimValues = {
  scope: string;
  key: string;
  fingerprint: string;
  lease: number;
  holder: string | null;
  now: number;
  expiresAt: number;
};

/** Inserts the key in flight; a key past its retention is a new request, and the same write takes it over. */
const claimKey = preparedQuery((db, param: Param<ClaimValues>) => {
  const fresh = {
    fingerprint: param('fingerprint'),
    state: 'in_flight' as const,
    locked_until: param('lease'),
    locked_by: param('holder'),
    response_status: null,
    response_body: null,
    response_headers: null,
    created_at: param('now'),
    expires_at: param('expiresAt'),
  };
  return db
    .insertInto('idempotency_keys')
    .values({ scope: param('scope'), key: param('key'), ...fresh })
    .onConflict((oc) =>
      oc
        .columns(['scope', 'key'])
        .doUpdateSet(fresh)
        .where('idempotency_keys.expires_at', '<=', param('now')),
    );
});

type SealValues = HeldKey & { status: number; body: string; headers: string | null };

/** Keeps the response of a key its holder still holds (the lease is the holder's fencing token). */
const sealKey = preparedQuery((db, param: Param<SealValues>) =>
  db
    .updateTable('idempotency_keys')
    .set({
      state: 'completed',
      locked_until: null,
      locked_by: null,
      response_status: param('status'),
      response_body: param('body'),
      response_headers: param('headers'),
    })
    .where(heldBy(param)),
);

/**
 * One guarded write: the lease moves on only if it is still the stale one this request read, so
 * of two retries racing for the same stale key exactly one takes it over. A new lease is always
 * later than the stale one, which makes it the holder's fencing token.
 */
async function takeOverStale(
  db: Db,
  request: IdempotentRequest,
  staleLease: number | null,
  next: { lease: number; holder: string | null },
): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ locked_until: next.lease, locked_by: next.holder })
    .where('scope', '=', request.scope)
    .where('key', '=', sha256Hex(request.key))
    .where('state', '=', 'in_flight')
    .where('locked_until', staleLease === null ? 'is' : '=', staleLease)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

type Holder = IdempotentRequest & { lease: number };

/** A held key: its scope, the hash of the key, and the lease its holder set. */
type HeldKey = { scope: string; key: string; lease: number };

function heldKey(holder: Holder): HeldKey {
  return { scope: holder.scope, key: sha256Hex(holder.key), lease: holder.lease };
}

/** Matches the key only while its holder still holds it (nobody took it over). */
function heldBy(param: Param<HeldKey>) {
  return (eb: ExpressionBuilder<Database, 'idempotency_keys'>) =>
    eb.and([
      eb('scope', '=', param('scope')),
      eb('key', '=', param('key')),
      eb('state', '=', 'in_flight'),
      eb('locked_until', '=', param('lease')),
    ]);
}

const releaseKey = preparedQuery((db, param: Param<HeldKey>) =>
  db.deleteFrom('idempotency_keys').where(heldBy(param)),
);

async function release(db: Db, holder: Holder): Promise<void> {
  await releaseKey(db, heldKey(holder));
}

/** Drops kept responses older than their retention. */
export async function deleteExpiredKeys(db: Db, clock: Clock): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('expires_at', '<=', clock.now().getTime()).execute();
}
