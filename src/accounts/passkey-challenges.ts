import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import { MINUTE_MS } from '../shared/clock.ts';
import { sha256Hex } from '../shared/ids.ts';
import type { PasskeyChallengesTable } from './passkeys.table.ts';

/** How long a browser has between asking for a challenge and sending back what it signed. */
export const PASSKEY_CHALLENGE_TTL_MS = 5 * MINUTE_MS;

export interface ChallengeScope {
  purpose: PasskeyChallengesTable['purpose'];
  /** The browser's form token (from its session or form cookie): the challenge is valid only there. */
  binding: string;
  /** The account a registration is for; absent for a sign-in. */
  userId?: string;
}

/** Keeps the SHA-256 of a challenge the library generated, for one use within the time limit. */
export async function storeChallenge(
  db: Db,
  clock: Clock,
  challenge: string,
  scope: ChallengeScope,
): Promise<void> {
  await db
    .insertInto('passkey_challenges')
    .values({
      challenge_hash: sha256Hex(challenge),
      purpose: scope.purpose,
      binding_hash: sha256Hex(scope.binding),
      user_id: scope.userId ?? null,
      expires_at: clock.now().getTime() + PASSKEY_CHALLENGE_TTL_MS,
    })
    .execute();
}

/**
 * Uses up a challenge: deleted in one statement whatever happens next, so of two requests
 * presenting it at most one finds it. It counts only if it is still live and was issued for
 * this purpose, this browser and this account.
 */
export async function consumeChallenge(
  db: Db,
  clock: Clock,
  challenge: string,
  scope: ChallengeScope,
): Promise<boolean> {
  const row = await db
    .deleteFrom('passkey_challenges')
    .where('challenge_hash', '=', sha256Hex(challenge))
    .returning(['purpose', 'binding_hash', 'user_id', 'expires_at'])
    .executeTakeFirst();
  return (
    row !== undefined &&
    Number(row.expires_at) > clock.now().getTime() &&
    row.purpose === scope.purpose &&
    row.binding_hash === sha256Hex(scope.binding) &&
    row.user_id === (scope.userId ?? null)
  );
}

export async function deleteExpiredPasskeyChallenges(db: Db, clock: Clock): Promise<void> {
  await db.deleteFrom('passkey_challenges').where('expires_at', '<=', clock.now().getTime()).execute();
}
