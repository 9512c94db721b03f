import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { type AuditActor, type AuditSource, recordAuditEvent } from '../audit/index.ts';
import { checkEntitlement, type PlanId, type PlanLimitReached } from '../catalog/index.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { type Clock, DAY_MS } from '../shared/clock.ts';
import { newId, sha256Hex } from '../shared/ids.ts';
import type { MaybePromise } from '../shared/maybe-promise.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { findWorkspacePlan, lockWorkspace } from '../workspace/index.ts';
import type { ApiKeysTable } from './api-keys.table.ts';

/**
 * Key format: `svc_live_` + 30 random base62 characters (178 bits) + a 6-character base62 CRC32
 * of everything before it. The checksum lets secret scanners recognise a leaked key offline, and
 * lets us refuse a mistyped key without a database lookup.
 */
export const API_KEY_PREFIX = 'svc_live_';
const RANDOM_LENGTH = 30;
const CHECKSUM_LENGTH = 6;
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);
/** A scanner can use this to find keys in text. */
export const API_KEY_SCAN_PATTERN = /\bsvc_live_[0-9A-Za-z]{36}\b/g;

function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 x 62: rejecting larger bytes keeps every character equally likely.
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

function checksum(body: string): string {
  let value = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

export function generateApiKey(): string {
  const body = API_KEY_PREFIX + randomBase62(RANDOM_LENGTH);
  return body + checksum(body);
}

/** Format and checksum; says nothing about whether the key exists. */
export function isWellFormedApiKey(value: string): boolean {
  if (!KEY_PATTERN.test(value)) return false;
  const body = value.slice(0, -CHECKSUM_LENGTH);
  return checksum(body) === value.slice(-CHECKSUM_LENGTH);
}

/** What lists show of a key: never the key or its hash. */
export interface ApiKeyInfo {
  id: string;
  workspaceId: string;
  name: string;
  prefix: string;
  lastFour: string;
  replacesKeyId: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** The app account that created it; null for operator (CLI) keys. */
  createdByUserId: string | null;
  expiresAt: Date | null;
}

function toInfo(row: ApiKeysTable): ApiKeyInfo {
  return {
    id: row.id,
    workspaceId: row.workspace_id,
    name: row.name,
    prefix: row.prefix,
    lastFour: row.last_four,
    replacesKeyId: row.replaces_key_id,
    createdAt: new Date(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : new Date(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : new Date(row.revoked_at),
    createdByUserId: row.created_by_user_id,
    expiresAt: row.expires_at === null ? null : new Date(row.expires_at),
  };
}

export interface NewApiKey {
  /** Shown once; only its hash is kept. */
  key: string;
  info: ApiKeyInfo;
}

/**
 * Creates a key for the workspace and records who did it, in one transaction; the key itself is
 * answered once and only its hash is kept.
 */
export async function createApiKey(
  db: Db,
  clock: Clock,
  input: {
    workspaceId: string;
    name: string;
    createdByUserId?: string | null;
    expiresAt?: Date | null;
  },
  source: AuditSource,
): Promise<Result<NewApiKey, PlanLimitReached | { code: 'workspace_not_found' }>> {
  return inTransaction(db, async (trx) => {
    // Under the workspace's lock, two keys created at once are counted one after the other.
    const workspace = await lockWorkspace(trx, input.workspaceId);
    if (!workspace) return err({ code: 'workspace_not_found' as const });
    const refusal = checkEntitlement(
      workspace.plan,
      'api_keys',
      await activeKeyCount(trx, clock, input.workspaceId),
    );
    if (refusal) return err(refusal);
    const created = await insertApiKey(trx, clock, input);
    await recordKeyEvent(trx, clock, 'api_key.created', created.info, source);
    return ok(created);
  });
}

/** Keys that work now or later: neither revoked nor expired (a rotated key counts until it stops). */
async function activeKeyCount(trx: Tx, clock: Clock, workspaceId: string): Promise<number> {
  const now = clock.now().getTime();
  const { count } = await trx
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('workspace_id', '=', workspaceId)
    .where((eb) => eb.or([eb('revoked_at', 'is', null), eb('revoked_at', '>', now)]))
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return Number(count);
}

async function insertApiKey(
  trx: Tx,
  clock: Clock,
  input: {
    workspaceId: string;
    name: string;
    replacesKeyId?: string;
    createdByUserId?: string | null;
    expiresAt?: Date | null;
  },
): Promise<NewApiKey> {
  const now = clock.now();
  const key = generateApiKey();
  const row: ApiKeysTable = {
    id: newId('key', now),
    workspace_id: input.workspaceId,
    name: input.name,
    key_hash: sha256Hex(key),
    prefix: key.slice(0, API_KEY_PREFIX.length + 4),
    last_four: key.slice(-4),
    replaces_key_id: input.replacesKeyId ?? null,
    created_at: now.getTime(),
    last_used_at: null,
    revoked_at: null,
    created_by_user_id: input.createdByUserId ?? null,
    expires_at: input.expiresAt?.getTime() ?? null,
  };
  await trx.insertInto('api_keys').values(row).execute();
  return { key, info: toInfo(row) };
}

function recordKeyEvent(
  trx: Tx,
  clock: Clock,
  action: 'api_key.created' | 'api_key.rotated' | 'api_key.revoked',
  key: ApiKeyInfo,
  source: AuditSource,
): Promise<void> {
  return recordAuditEvent(trx, {
    workspaceId: key.workspaceId,
    action,
    target: { type: 'api_key', id: key.id, label: key.name },
    ...source,
    at: clock.now(),
  });
}

export async function listApiKeys(db: Db, workspaceId: string): Promise<ApiKeyInfo[]> {
  const rows = await db
    .selectFrom('api_keys')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('id')
    .execute();
  return rows.map(toInfo);
}

export async function findApiKey(db: Db, keyId: string): Promise<ApiKeyInfo | undefined> {
  const row = await db.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirst();
  return row ? toInfo(row) : undefined;
}

/**
 * Sets the instant a key stops working. A key that stops earlier already keeps its earlier time;
 * answers whether anything changed.
 */
async function revokeAt(trx: Tx, keyId: string, at: Date): Promise<boolean> {
  const result = await trx
    .updateTable('api_keys')
    .set({ revoked_at: at.getTime() })
    .where('id', '=', keyId)
    .where((eb) => eb.or([eb('revoked_at', 'is', null), eb('revoked_at', '>', at.getTime())]))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Revokes a key now and records who did it (a key revoked already changes nothing and records
 * nothing); `undefined` means there is no such key.
 */
export async function revokeApiKey(
  db: Db,
  clock: Clock,
  keyId: string,
  source: AuditSource,
): Promise<ApiKeyInfo | undefined> {
  const revoked = await inTransaction(db, async (trx) => {
    const key = await findApiKey(trx, keyId);
    if (!key) return undefined;
    if (!(await revokeAt(trx, keyId, clock.now()))) return key;
    const revoked = await findApiKey(trx, keyId);
    if (revoked) await recordKeyEvent(trx, clock, 'api_key.revoked', revoked, source);
    return revoked;
  });
  forgetVerifiedKeys(db);
  return revoked;
}

/** Revokes a key of this workspace now; `undefined` when the workspace has no such key. */
export async function revokeWorkspaceApiKey(
  db: Db,
  clock: Clock,
  input: { workspaceId: string; keyId: string },
  source: AuditSource,
): Promise<ApiKeyInfo | undefined> {
  const key = await findApiKey(db, input.keyId);
  if (!key || key.workspaceId !== input.workspaceId) return undefined;
  return revokeApiKey(db, clock, key.id, source);
}

/**
 * Why a key was not rotated: there is no such key, it stopped working already (revoked or
 * expired), it was rotated already (its end is set: a second rotation would leave two successors,
 * so of two concurrent rotations one answers this), or an overlap would keep one key more working
 * than the plan allows.
 */
export type RotateError =
  | { code: 'not_found' }
  | { code: 'revoked' }
  | { code: 'expired' }
  | { code: 'already_rotated'; until: Date }
  | PlanLimitReached;

/**
 * The longest a replaced key may keep working beside its successor (the CLI and the app offer up
 * to this): long enough for any deployment, short enough to end.
 */
export const MAX_ROTATION_OVERLAP_MS = 90 * DAY_MS;

/**
 * A new key for the same workspace; the old one stops working at `revokeOldAt` (now by default).
 * Without an overlap the new key replaces the old one and the count stays, so it is allowed even
 * over the plan's limit; with one, both work until then and count, so at the limit it is refused
 * (`plan_limit_reached`). Setting the old key's end is a conditional update on a key whose end is
 * not set yet, under the workspace's lock: of two rotations of one key, one makes the successor.
 */
export async function rotateApiKey(
  db: Db,
  clock: Clock,
  keyId: string,
  source: AuditSource,
  revokeOldAt: Date = clock.now(),
): Promise<Result<NewApiKey & { old: ApiKeyInfo }, RotateError>> {
  const rotated = await inTransaction(db, async (trx) => {
    const found = await findApiKey(trx, keyId);
    if (!found) return err({ code: 'not_found' as const });
    const workspace = await lockWorkspace(trx, found.workspaceId);
    if (!workspace) return err({ code: 'not_found' as const });
    const now = clock.now().getTime();
    if (revokeOldAt.getTime() > now) {
      const refusal = checkEntitlement(
        workspace.plan,
        'api_keys',
        await activeKeyCount(trx, clock, found.workspaceId),
      );
      if (refusal) return err(refusal);
    }
    const claimed = await trx
      .updateTable('api_keys')
      .set({ revoked_at: Math.max(revokeOldAt.getTime(), now) })
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .executeTakeFirst();
    const old = await findApiKey(trx, keyId);
    if (!old) return err({ code: 'not_found' as const });
    if (claimed.numUpdatedRows === 0n) return err(whyNotRotatable(old, now));
    const created = await insertApiKey(trx, clock, {
      workspaceId: old.workspaceId,
      name: old.name,
      replacesKeyId: old.id,
      createdByUserId: old.createdByUserId,
      expiresAt: old.expiresAt,
    });
    await recordKeyEvent(trx, clock, 'api_key.rotated', old, source);
    return ok({ ...created, old });
  });
  forgetVerifiedKeys(db);
  return rotated;
}

function whyNotRotatable(key: ApiKeyInfo, now: number): RotateError {
  if (key.revokedAt && key.revokedAt.getTime() <= now) return { code: 'revoked' };
  if (key.expiresAt && key.expiresAt.getTime() <= now) return { code: 'expired' };
  return key.revokedAt ? { code: 'already_rotated', until: key.revokedAt } : { code: 'not_found' };
}

/** Who a request acts as: one key of one workspace. */
export interface Principal {
  keyId: string;
  workspaceId: string;
  /** The key's name and display prefix, so audit events can say which key acted. */
  name: string;
  prefix: string;
  /** The workspace's plan, which sets the key's request rate. */
  plan: PlanId;
  /** Who the audit log names when not the key itself (an MCP client acting for a person). */
  actor?: AuditActor;
  /** Reads only: any other method is refused (`insufficient_scope`). */
  readOnly?: boolean;
}

export type AuthenticationError = 'invalid' | 'revoked' | 'expired';

/** `last_used_at` is written when it is older than this, so a busy key costs no write per request. */
const LAST_USED_RESOLUTION_MS = 60_000;

/**
 * How long an instance may go on accepting a key it verified without looking at the database
 * again: a revocation, an expiry brought forward or a plan change made on another instance (or by
 * the CLI) takes effect there within this bound. On the instance that made the change it takes
 * effect at once (the change clears that instance's cache). See docs/decisions.md.
 */
export const API_KEY_CACHE_MS = 5_000;
/** Keys remembered per database handle; past this the oldest is forgotten first. */
const API_KEY_CACHE_ENTRIES = 10_000;

interface VerifiedKey {
  principal: Principal;
  revokedAt: number | null;
  expiresAt: number | null;
  /** Until when the entry may be used without reading the key again. */
  freshUntil: number;
}

/**
 * Verified keys, by the key as presented (no checksum, hash or query on a hit), per database
 * handle: one handle is one instance's view of the data, and another instance on the same data has
 * its own handle and its own cache.
 */
const verifiedKeys = new WeakMap<Db, Map<string, VerifiedKey>>();

function cacheOf(db: Db): Map<string, VerifiedKey> {
  let cache = verifiedKeys.get(db);
  if (!cache) {
    cache = new Map();
    verifiedKeys.set(db, cache);
  }
  return cache;
}

/** Forgets every verified key of this handle, after a change to keys made through it. */
function forgetVerifiedKeys(db: Db): void {
  verifiedKeys.get(db)?.clear();
}

function verdict(key: VerifiedKey, now: number): Result<Principal, AuthenticationError> {
  if (key.revokedAt !== null && key.revokedAt <= now) return err('revoked');
  if (key.expiresAt !== null && key.expiresAt <= now) return err('expired');
  return ok(key.principal);
}

/**
 * Verifies a key as presented. A key verified through this handle within API_KEY_CACHE_MS is
 * answered at once, from memory; any other is looked up (a promise).
 */
export function authenticateApiKey(
  db: Db,
  clock: Clock,
  presented: string,
): MaybePromise<Result<Principal, AuthenticationError>> {
  const cache = cacheOf(db);
  const cached = cache.get(presented);
  const now = clock.now().getTime();
  if (cached && cached.freshUntil > now) return verdict(cached, now);
  if (cached) cache.delete(presented);
  if (!isWellFormedApiKey(presented)) return err('invalid');
  return verifyAndRemember(db, cache, presented, now);
}

async function verifyAndRemember(
  db: Db,
  cache: Map<string, VerifiedKey>,
  presented: string,
  now: number,
): Promise<Result<Principal, AuthenticationError>> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'workspace_id', 'name', 'prefix', 'revoked_at', 'expires_at', 'last_used_at'])
    .where('key_hash', '=', sha256Hex(presented))
    .executeTakeFirst();
  const plan = row && (await findWorkspacePlan(db, row.workspace_id));
  if (!row || !plan) return err('invalid');
  const verified: VerifiedKey = {
    principal: {
      keyId: row.id,
      workspaceId: row.workspace_id,
      name: row.name,
      prefix: row.prefix,
      plan,
    },
    revokedAt: row.revoked_at,
    expiresAt: row.expires_at,
    freshUntil: now + API_KEY_CACHE_MS,
  };
  const answer = verdict(verified, now);
  if (!answer.ok) return answer;
  if (row.last_used_at === null || now - row.last_used_at >= LAST_USED_RESOLUTION_MS) {
    await db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', row.id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', now)]))
      .execute();
  }
  if (cache.size >= API_KEY_CACHE_ENTRIES) {
    const oldest = cache.keys().next();
    if (!oldest.done) cache.delete(oldest.value);
  }
  cache.set(presented, verified);
  return answer;
}
