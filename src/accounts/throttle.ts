import { sql } from 'kysely';
import type { Db } from '../db/schema.ts';
import { MINUTE_MS } from '../shared/clock.ts';
import { sha256Hex } from '../shared/ids.ts';
import { normalizeEmail } from './users.ts';

/**
 * Password guesses allowed per window, counted in the database so every instance sees the same
 * counts. An address is counted whether or not it has an account, so being throttled says
 * nothing about that; a correct password clears the address's count (not the client's).
 */
export const THROTTLE_WINDOW_MS = 15 * MINUTE_MS;
export const ATTEMPTS_PER_ACCOUNT = 10;
export const ATTEMPTS_PER_CLIENT = 50;
/** Emails asked for (sign-in links, resets, address confirmations) per window. */
export const EMAILS_PER_ADDRESS = 3;
export const EMAILS_PER_CLIENT = 20;

export function accountThrottleKey(email: string): string {
  return `account:${sha256Hex(normalizeEmail(email))}`;
}

export function clientThrottleKey(ip: string): string {
  return `ip:${ip}`;
}

/**
 * Counts one attempt under `key` and answers how many the current window holds, in one
 * statement (concurrent guesses cannot slip past the count). A window that has passed restarts.
 */
async function countAttempt(
  db: Db,
  key: string,
  now: number,
): Promise<{ attempts: number; windowStart: number }> {
  const windowFloor = now - THROTTLE_WINDOW_MS;
  const row = await db
    .insertInto('auth_throttles')
    .values({ key, attempts: 1, window_started_at: now })
    .onConflict((oc) =>
      oc.column('key').doUpdateSet({
        attempts: sql<number>`case when auth_throttles.window_started_at <= ${windowFloor} then 1 else auth_throttles.attempts + 1 end`,
        window_started_at: sql<number>`case when auth_throttles.window_started_at <= ${windowFloor} then ${now} else auth_throttles.window_started_at end`,
      }),
    )
    .returning(['attempts', 'window_started_at'])
    .executeTakeFirstOrThrow();
  return { attempts: Number(row.attempts), windowStart: Number(row.window_started_at) };
}

export type ThrottleVerdict = { allowed: true } | { allowed: false; retryAfterMs: number };

/** Counts one attempt under each key; refused when any of them is over its limit. */
async function countAgainstLimits(
  db: Db,
  now: number,
  limits: readonly { key: string; limit: number }[],
): Promise<ThrottleVerdict> {
  const over: number[] = [];
  for (const { key, limit } of limits) {
    const counted = await countAttempt(db, key, now);
    if (counted.attempts > limit) over.push(counted.windowStart);
  }
  if (over.length === 0) return { allowed: true };
  return { allowed: false, retryAfterMs: Math.max(...over) + THROTTLE_WINDOW_MS - now };
}

/** Counts a guess for the address and for the client; refused when either is over its limit. */
export async function countGuess(
  db: Db,
  now: number,
  input: { email: string; ip: string },
): Promise<ThrottleVerdict> {
  return countAgainstLimits(db, now, [
    { key: accountThrottleKey(input.email), limit: ATTEMPTS_PER_ACCOUNT },
    { key: clientThrottleKey(input.ip), limit: ATTEMPTS_PER_CLIENT },
  ]);
}

/** Counts a guess for the client alone (a passkey sign-in names no address up front). */
export async function countClientGuess(db: Db, now: number, ip: string): Promise<ThrottleVerdict> {
  return countAgainstLimits(db, now, [{ key: clientThrottleKey(ip), limit: ATTEMPTS_PER_CLIENT }]);
}

/** Counts a guess for the account an address names, once a passkey sign-in has named it. */
export async function countAccountGuess(db: Db, now: number, email: string): Promise<ThrottleVerdict> {
  return countAgainstLimits(db, now, [{ key: accountThrottleKey(email), limit: ATTEMPTS_PER_ACCOUNT }]);
}

/**
 * Counts an email the app is asked to send on a visitor's request (a sign-in link, a password
 * reset, a confirmation of a new address) for the address and for the client. Like guesses, an
 * address counts whether or not it has an account, so being throttled says nothing about that.
 */
export async function countEmailRequest(
  db: Db,
  now: number,
  input: { email: string; ip: string },
): Promise<ThrottleVerdict> {
  return countAgainstLimits(db, now, [
    { key: `email-to:${sha256Hex(normalizeEmail(input.email))}`, limit: EMAILS_PER_ADDRESS },
    { key: `email-from:${input.ip}`, limit: EMAILS_PER_CLIENT },
  ]);
}

export async function clearAccountGuesses(db: Db, email: string): Promise<void> {
  await db.deleteFrom('auth_throttles').where('key', '=', accountThrottleKey(email)).execute();
}

export async function deleteStaleThrottles(db: Db, now: number): Promise<void> {
  await db
    .deleteFrom('auth_throttles')
    .where('window_started_at', '<=', now - THROTTLE_WINDOW_MS)
    .execute();
}
