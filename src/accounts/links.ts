import type { Db, Tx } from '../db/schema.ts';
import { type Clock, DAY_MS, HOUR_MS, MINUTE_MS } from '../shared/clock.ts';
import { newId, newSecret, sha256Hex } from '../shared/ids.ts';
import type { AccountLinkPurpose } from './accounts.table.ts';

export type { AccountLinkPurpose } from './accounts.table.ts';

/** How long an emailed link works: short for what signs in, a day for confirming a new address. */
export const LINK_LIFETIME_MS: Readonly<Record<AccountLinkPurpose, number>> = {
  sign_in: 15 * MINUTE_MS,
  password_reset: HOUR_MS,
  email_change: DAY_MS,
};

/** What the lifetimes read as in emails and on pages. */
export const LINK_VALID_FOR: Readonly<Record<AccountLinkPurpose, string>> = {
  sign_in: '15 minutes',
  password_reset: '1 hour',
  email_change: '24 hours',
};

/** A prefix per purpose, so a link of one kind is never accepted as another. */
const SECRET_PREFIX: Readonly<Record<AccountLinkPurpose, string>> = {
  sign_in: 'sil_',
  password_reset: 'pwr_',
  email_change: 'emc_',
};
const SECRET_BODY = /^[A-Za-z0-9_-]{43}$/;

export interface AccountLink {
  id: string;
  userId: string;
  purpose: AccountLinkPurpose;
  newEmail: string | null;
  expiresAt: Date;
}

function tokenHash(purpose: AccountLinkPurpose, token: string): string | undefined {
  const prefix = SECRET_PREFIX[purpose];
  if (!token.startsWith(prefix) || !SECRET_BODY.test(token.slice(prefix.length))) return undefined;
  return sha256Hex(token);
}

/**
 * Records a new link (256 random bits; only their SHA-256 is stored) and answers its secret, for
 * the email. Earlier unused links of the same purpose stop working: only the newest one does.
 */
export async function issueLink(
  trx: Tx,
  clock: Clock,
  input: { userId: string; purpose: AccountLinkPurpose; newEmail?: string },
): Promise<{ secret: string; expiresAt: Date }> {
  const now = clock.now().getTime();
  const secret = newSecret(SECRET_PREFIX[input.purpose]);
  const expiresAt = new Date(now + LINK_LIFETIME_MS[input.purpose]);
  await cancelUnusedLinks(trx, input.userId, [input.purpose]);
  await trx
    .insertInto('account_links')
    .values({
      id: newId('link', new Date(now)),
      user_id: input.userId,
      purpose: input.purpose,
      token_hash: sha256Hex(secret),
      new_email: input.newEmail ?? null,
      created_at: now,
      expires_at: expiresAt.getTime(),
      used_at: null,
    })
    .execute();
  return { secret, expiresAt };
}

function toLink(row: {
  id: string;
  user_id: string;
  purpose: AccountLinkPurpose;
  new_email: string | null;
  expires_at: number;
}): AccountLink {
  return {
    id: row.id,
    userId: row.user_id,
    purpose: row.purpose,
    newEmail: row.new_email,
    expiresAt: new Date(row.expires_at),
  };
}

/** The link a token names if it can still be used (unused, not expired); otherwise undefined. */
export async function findUsableLink(
  db: Db,
  clock: Clock,
  purpose: AccountLinkPurpose,
  token: string,
): Promise<AccountLink | undefined> {
  const hash = tokenHash(purpose, token);
  if (!hash) return undefined;
  const row = await db
    .selectFrom('account_links')
    .selectAll()
    .where('token_hash', '=', hash)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', clock.now().getTime())
    .executeTakeFirst();
  return row ? toLink(row) : undefined;
}

/**
 * Uses a link: one conditional update marks it used, so of two concurrent requests exactly one
 * gets the link and the other undefined (as for an unknown, used or expired one).
 */
export async function useLink(
  db: Db,
  clock: Clock,
  purpose: AccountLinkPurpose,
  token: string,
): Promise<AccountLink | undefined> {
  const hash = tokenHash(purpose, token);
  if (!hash) return undefined;
  const now = clock.now().getTime();
  const row = await db
    .updateTable('account_links')
    .set({ used_at: now })
    .where('token_hash', '=', hash)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['id', 'user_id', 'purpose', 'new_email', 'expires_at'])
    .executeTakeFirst();
  return row ? toLink(row) : undefined;
}

/** Makes the account's unused links (of the given purposes, or all) stop working. */
export async function cancelUnusedLinks(
  db: Db,
  userId: string,
  purposes?: readonly AccountLinkPurpose[],
): Promise<void> {
  let query = db.deleteFrom('account_links').where('user_id', '=', userId).where('used_at', 'is', null);
  if (purposes) query = query.where('purpose', 'in', [...purposes]);
  await query.execute();
}

export async function deleteEndedLinks(db: Db, clock: Clock): Promise<void> {
  await db.deleteFrom('account_links').where('expires_at', '<=', clock.now().getTime()).execute();
}
