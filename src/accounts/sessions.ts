import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import { HOUR_MS, MINUTE_MS } from '../shared/clock.ts';
import { newId, newSecret, sha256Hex } from '../shared/ids.ts';
import { findUserById, type User } from './users.ts';

/**
 * OWASP ASVS level 2 (3.3.2): a session ends after 30 minutes without a request and 12 hours
 * after sign-in, whatever happens in between.
 */
export const SESSION_IDLE_TIMEOUT_MS = 30 * MINUTE_MS;
export const SESSION_ABSOLUTE_TIMEOUT_MS = 12 * HOUR_MS;
/** `last_seen_at` is written at most this often, so an active page view costs no write. */
const TOUCH_RESOLUTION_MS = MINUTE_MS;

const SESSION_SECRET_PATTERN = /^ses_[A-Za-z0-9_-]{43}$/;

export interface Session {
  id: string;
  userId: string;
  createdAt: Date;
  expiresAt: Date;
}

export interface NewSession {
  /** For the cookie only; the table keeps its SHA-256. */
  secret: string;
  session: Session;
}

/**
 * Starts a session for the account with a fresh secret; the session the browser had before (if
 * any) ends, so a secret planted before sign-in is worthless after it.
 */
export async function startSession(
  db: Db,
  clock: Clock,
  userId: string,
  previousSecret?: string,
): Promise<NewSession> {
  if (previousSecret) await endSession(db, previousSecret);
  const now = clock.now().getTime();
  const secret = newSecret('ses_');
  const session: Session = {
    id: newId('ses', new Date(now)),
    userId,
    createdAt: new Date(now),
    expiresAt: new Date(now + SESSION_ABSOLUTE_TIMEOUT_MS),
  };
  await db
    .insertInto('sessions')
    .values({
      id: session.id,
      token_hash: sha256Hex(secret),
      user_id: userId,
      created_at: now,
      last_seen_at: now,
      expires_at: session.expiresAt.getTime(),
    })
    .execute();
  return { secret, session };
}

/** The live session a cookie names, with its account; undefined when unknown, idle or expired. */
export async function resumeSession(
  db: Db,
  clock: Clock,
  secret: string,
): Promise<{ session: Session; user: User } | undefined> {
  if (!SESSION_SECRET_PATTERN.test(secret)) return undefined;
  const row = await db
    .selectFrom('sessions')
    .selectAll()
    .where('token_hash', '=', sha256Hex(secret))
    .executeTakeFirst();
  if (!row) return undefined;
  const now = clock.now().getTime();
  if (row.expires_at <= now || row.last_seen_at + SESSION_IDLE_TIMEOUT_MS <= now) {
    await db.deleteFrom('sessions').where('id', '=', row.id).execute();
    return undefined;
  }
  const user = await findUserById(db, row.user_id);
  if (!user) return undefined;
  if (now - row.last_seen_at >= TOUCH_RESOLUTION_MS) {
    await db.updateTable('sessions').set({ last_seen_at: now }).where('id', '=', row.id).execute();
  }
  return {
    session: {
      id: row.id,
      userId: row.user_id,
      createdAt: new Date(row.created_at),
      expiresAt: new Date(row.expires_at),
    },
    user,
  };
}

export async function endSession(db: Db, secret: string): Promise<void> {
  if (!SESSION_SECRET_PATTERN.test(secret)) return;
  await db.deleteFrom('sessions').where('token_hash', '=', sha256Hex(secret)).execute();
}

export async function deleteExpiredSessions(db: Db, clock: Clock): Promise<void> {
  const now = clock.now().getTime();
  await db
    .deleteFrom('sessions')
    .where((eb) =>
      eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', now - SESSION_IDLE_TIMEOUT_MS)]),
    )
    .execute();
}

/** Ends every session of the account (after its password changed: a thief's session ends too). */
export async function endAllSessions(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('sessions').where('user_id', '=', userId).execute();
}
