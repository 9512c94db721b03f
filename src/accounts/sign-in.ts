import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { hashPassword, needsRehash, verifyAgainstDummy, verifyPassword } from './passwords.ts';
import { clearAccountGuesses, countGuess } from './throttle.ts';
import { findUserRow, setPasswordHash, type User } from './users.ts';

export type CredentialsError =
  | {
      code: 'invalid_credentials';
      /** The account of the address, when there is one: for the audit log only, never for the visitor. */
      account: { id: string; email: string } | null;
    }
  | { code: 'throttled'; retryAfterMs: number };

/**
 * Checks an address and password. An unknown address, an account without a password and a wrong
 * password give the same answer after the same work (a dummy hash is verified), and every
 * attempt counts against the address and the client before the password is looked at.
 */
export async function checkCredentials(
  deps: { db: Db; clock: Clock },
  input: { email: string; password: string; ip: string },
): Promise<Result<User, CredentialsError>> {
  const verdict = await countGuess(deps.db, deps.clock.now().getTime(), input);
  if (!verdict.allowed) return err({ code: 'throttled', retryAfterMs: verdict.retryAfterMs });
  const row = await findUserRow(deps.db, input.email);
  const matches =
    row?.password_hash != null
      ? await verifyPassword(row.password_hash, input.password)
      : await verifyAgainstDummy(input.password);
  if (!row || !matches) {
    return err({ code: 'invalid_credentials', account: row ? { id: row.id, email: row.email } : null });
  }
  await clearAccountGuesses(deps.db, input.email);
  if (row.password_hash && needsRehash(row.password_hash)) {
    await setPasswordHash(deps.db, deps.clock, row.id, await hashPassword(input.password));
  }
  return ok({ id: row.id, email: row.email, hasPassword: true, createdAt: new Date(row.created_at) });
}
