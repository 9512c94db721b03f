import type { Db, Tx } from '../db/schema.ts';
import { inTransaction, isUniqueViolation } from '../db/transaction.ts';
import {
  queueMail,
  renderEmailChangeConfirmation,
  renderEmailChanged,
  renderPasswordChanged,
} from '../mail/index.ts';
import type { Clock } from '../shared/clock.ts';
import { maskEmail } from '../shared/redact.ts';
import { err, ok, type Result } from '../shared/result.ts';
import type { RecordAccountChange } from './account-audit.ts';
import { accountLinkUrl } from './email-links.ts';
import { cancelUnusedLinks, findUsableLink, issueLink, LINK_VALID_FOR, useLink } from './links.ts';
import { hashPassword, passwordProblem } from './passwords.ts';
import { endAllSessions } from './sessions.ts';
import { type CredentialsError, checkCredentials } from './sign-in.ts';
import { countEmailRequest } from './throttle.ts';
import {
  findUserById,
  findUserRow,
  isValidEmail,
  normalizeEmail,
  setPasswordHash,
  type User,
} from './users.ts';

export type ChangePasswordError = CredentialsError | { code: 'weak_password'; message: string };

/**
 * Changes the signed-in account's password, which needs the current one (checked and throttled
 * like a sign-in). Every session of the account ends, unused reset links stop working, and the
 * account's address is told; the caller signs the browser in again with a new session.
 */
export async function changePassword(
  deps: { db: Db; clock: Clock },
  input: { user: User; currentPassword: string; newPassword: string; ip: string },
  recordChange: RecordAccountChange,
): Promise<Result<void, ChangePasswordError>> {
  const problem = passwordProblem(input.newPassword);
  if (problem) return err({ code: 'weak_password', message: problem });
  const checked = await checkCredentials(deps, {
    email: input.user.email,
    password: input.currentPassword,
    ip: input.ip,
  });
  if (!checked.ok) return err(checked.error);
  const passwordHash = await hashPassword(input.newPassword);
  await inTransaction(deps.db, async (trx) => {
    await setPasswordHash(trx, deps.clock, input.user.id, passwordHash);
    await endAllSessions(trx, input.user.id);
    await cancelUnusedLinks(trx, input.user.id, ['password_reset']);
    await queueMail(
      trx,
      deps.clock,
      input.user.email,
      renderPasswordChanged({ at: deps.clock.now(), how: 'account_page' }),
    );
    await recordChange(trx, { action: 'account.password_changed', account: input.user });
  });
  return ok(undefined);
}

export type EmailChangeRequestError =
  | CredentialsError
  | { code: 'invalid_email' }
  | { code: 'same_email' }
  | { code: 'email_unavailable' };

/**
 * Asks to move the signed-in account to another address: with the current password, a
 * confirmation link goes to the new address, and nothing changes until it is used. Whether the
 * new address belongs to another account is told only after the password is right (so only to
 * the account's holder, and throttled like guesses).
 */
export async function requestEmailChange(
  deps: { db: Db; clock: Clock; baseUrl: string },
  input: { user: User; password: string; newEmail: string; ip: string },
  recordChange: RecordAccountChange,
): Promise<Result<{ newEmail: string; expiresAt: Date }, EmailChangeRequestError>> {
  const newEmail = input.newEmail.trim();
  if (!isValidEmail(newEmail)) return err({ code: 'invalid_email' });
  if (normalizeEmail(newEmail) === normalizeEmail(input.user.email)) return err({ code: 'same_email' });
  const checked = await checkCredentials(deps, {
    email: input.user.email,
    password: input.password,
    ip: input.ip,
  });
  if (!checked.ok) return err(checked.error);
  if (await findUserRow(deps.db, newEmail)) return err({ code: 'email_unavailable' });
  const verdict = await countEmailRequest(deps.db, deps.clock.now().getTime(), {
    email: newEmail,
    ip: input.ip,
  });
  if (!verdict.allowed) return err({ code: 'throttled', retryAfterMs: verdict.retryAfterMs });
  const expiresAt = await inTransaction(deps.db, async (trx) => {
    const link = await issueLink(trx, deps.clock, {
      userId: input.user.id,
      purpose: 'email_change',
      newEmail,
    });
    const mail = renderEmailChangeConfirmation({
      url: accountLinkUrl(deps.baseUrl, 'email_change', link.secret),
      validFor: LINK_VALID_FOR.email_change,
    });
    await queueMail(trx, deps.clock, newEmail, mail);
    await recordChange(trx, {
      action: 'account.email_change_requested',
      account: input.user,
      target: emailChangeTarget(input.user, newEmail),
    });
    return link.expiresAt;
  });
  return ok({ newEmail, expiresAt });
}

/** The account, labelled with the move from its address to the new one. */
function emailChangeTarget(account: { id: string; email: string }, newEmail: string) {
  return { type: 'user', id: account.id, label: `${account.email} → ${newEmail}` };
}

/** The address an unused, unexpired confirmation link would move its account to. */
export async function pendingEmailChange(
  deps: { db: Db; clock: Clock },
  token: string,
): Promise<{ newEmail: string } | undefined> {
  const link = await findUsableLink(deps.db, deps.clock, 'email_change', token);
  return link?.newEmail ? { newEmail: link.newEmail } : undefined;
}

export type EmailChangeError = 'link_invalid' | 'email_unavailable';

/** Thrown inside the transaction to undo the link's use when the address was taken meanwhile. */
class AddressTaken extends Error {}

/**
 * Uses a confirmation link: the account's address changes (and `addressChanged` moves what
 * follows it), its unused sign-in and reset links (which went to the old address) stop working,
 * and the old address is told. The unique index on
 * `email_key` decides a race with another account taking the address; the loser changes nothing.
 */
export async function confirmEmailChange(
  deps: { db: Db; clock: Clock },
  token: string,
  recordChange: RecordAccountChange,
  /** What else follows the account's address, in the same transaction (its memberships). */
  addressChanged: (trx: Tx, userId: string, newEmail: string) => Promise<void>,
): Promise<Result<User, EmailChangeError>> {
  let userId: string | undefined;
  try {
    userId = await inTransaction(deps.db, async (trx) => {
      const link = await useLink(trx, deps.clock, 'email_change', token);
      if (!link?.newEmail) return undefined;
      const account = await trx
        .selectFrom('users')
        .select(['id', 'email'])
        .where('id', '=', link.userId)
        .executeTakeFirst();
      if (!account) return undefined;
      try {
        await trx
          .updateTable('users')
          .set({
            email: link.newEmail,
            email_key: normalizeEmail(link.newEmail),
            updated_at: deps.clock.now().getTime(),
          })
          .where('id', '=', link.userId)
          .execute();
      } catch (error) {
        if (isUniqueViolation(error)) throw new AddressTaken();
        throw error;
      }
      await cancelUnusedLinks(trx, link.userId, ['sign_in', 'password_reset']);
      await addressChanged(trx, link.userId, link.newEmail);
      await queueMail(
        trx,
        deps.clock,
        account.email,
        renderEmailChanged({ newEmailMasked: maskEmail(link.newEmail) }),
      );
      await recordChange(trx, {
        action: 'account.email_changed',
        account,
        target: emailChangeTarget(account, link.newEmail),
      });
      return link.userId;
    });
  } catch (error) {
    if (error instanceof AddressTaken) return err('email_unavailable');
    throw error;
  }
  const user = userId ? await findUserById(deps.db, userId) : undefined;
  return user ? ok(user) : err('link_invalid');
}
