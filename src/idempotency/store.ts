import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Db } from '../db/schema.ts';
import { type Clock, HOUR_MS } from '../shared/clock.ts';
import { sha256Hex } from '../shared/ids.ts';
import { canonicalJson } from '../shared/jcs.ts';

export const KEY_RETENTION_MS = 24 * HOUR_MS;
/** How long a request may hold its key before another may take over (the holder crashed). */
const IN_FLIGHT_LEASE_MS = 2 * 60_000;
export const MIN_KEY_LENGTH = 16;
export const MAX_KEY_LENGTH = 255;

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
 * and thrown errors release the key so a retry runs afresh.
 */
export async function runIdempotently(
  deps: { db: Db; clock: Clock },
  request: IdempotentRequest,
  handle: () => Promise<StoredResponse>,
): Promise<IdempotencyOutcome> {
  const { db, clock } = deps;
  const fingerprint = fingerprintOf(request.body);
  const now = clock.now().getTime();
  const claimed = await claim(db, request, fingerprint, now);
  if (!claimed) {
    const existing = await db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('scope', '=', request.scope)
      .where('key', '=', sha256Hex(request.key))
      .executeTakeFirst();
    if (!existing) return runIdempotently(deps, request, handle);
    if (existing.fingerprint !== fingerprint) return { kind: 'conflict' };
    if (existing.state === 'completed' && existing.response_status !== null) {
      const sealed = sealerFor(request);
      return {
        kind: 'replayed',
        response: {
          status: existing.response_status,
          body: existing.response_body === null ? null : JSON.parse(sealed.open(existing.response_body)),
          headers: existing.response_headers ? JSON.parse(sealed.open(existing.response_headers)) : undefined,
        },
      };
    }
    if (!(await takeOverAbandoned(db, request, now))) {
      const waitMs = Math.max(1000, (existing.locked_until ?? now) - now);
      return { kind: 'in_flight', retryAfterSeconds: Math.min(Math.ceil(waitMs / 1000), 5) };
    }
  }

  let response: StoredResponse;
  try {
    response = await handle();
  } catch (error) {
    await release(db, request);
    throw error;
  }
  if (response.status >= 500 || response.keep === false) {
    await release(db, request);
  } else {
    const sealed = sealerFor(request);
    await db
      .updateTable('idempotency_keys')
      .set({
        state: 'completed',
        locked_until: null,
        response_status: response.status,
        response_body: sealed.seal(JSON.stringify(response.body ?? null)),
        response_headers: response.headers ? sealed.seal(JSON.stringify(response.headers)) : null,
      })
      .where('scope', '=', request.scope)
      .where('key', '=', sha256Hex(request.key))
      .execute();
  }
  return { kind: 'fresh', response };
}

/**
 * Kept responses can hold secrets (a create answer carries the new session id), so they are
 * encrypted (AES-256-GCM) under a key derived from the Idempotency-Key, which only the client
 * holds: the table stores the key's hash, and a copy of the database alone cannot read them.
 */
function sealerFor(request: IdempotentRequest) {
  const key = createHash('sha256').update(`svc-idempotency\0${request.scope}\0${request.key}`).digest();
  return {
    seal(plain: string): string {
      const iv = randomBytes(12);
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

async function claim(db: Db, request: IdempotentRequest, fingerprint: string, now: number): Promise<boolean> {
  // A key past its retention is a new request: clear it first.
  await db
    .deleteFrom('idempotency_keys')
    .where('scope', '=', request.scope)
    .where('key', '=', sha256Hex(request.key))
    .where('expires_at', '<=', now)
    .execute();
  const result = await db
    .insertInto('idempotency_keys')
    .values({
      scope: request.scope,
      key: sha256Hex(request.key),
      fingerprint,
      state: 'in_flight',
      locked_until: now + IN_FLIGHT_LEASE_MS,
      response_status: null,
      response_body: null,
      response_headers: null,
      created_at: now,
      expires_at: now + KEY_RETENTION_MS,
    })
    .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

async function takeOverAbandoned(db: Db, request: IdempotentRequest, now: number): Promise<boolean> {
  const result = await db
    .updateTable('idempotency_keys')
    .set({ locked_until: now + IN_FLIGHT_LEASE_MS })
    .where('scope', '=', request.scope)
    .where('key', '=', sha256Hex(request.key))
    .where('state', '=', 'in_flight')
    .where('locked_until', '<=', now)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

async function release(db: Db, request: IdempotentRequest): Promise<void> {
  await db
    .deleteFrom('idempotency_keys')
    .where('scope', '=', request.scope)
    .where('key', '=', sha256Hex(request.key))
    .where('state', '=', 'in_flight')
    .execute();
}

/** Drops kept responses older than their retention. */
export async function deleteExpiredKeys(db: Db, clock: Clock): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('expires_at', '<=', clock.now().getTime()).execute();
}
