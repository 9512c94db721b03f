import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { enqueueJob, type JobDefinition } from '../jobs/index.ts';
import { queueMail, renderPasswordChanged, renderPasswordReset, renderSignInLink } from '../mail/index.ts';
import type { Clock } from '../shared/clock.ts';
import { err, ok, type Result } from '../shared/result.ts';
import type { RecordAccountChange } from './account-audit.ts';
import { cancelUnusedLinks, findUsableLink, issueLink, LINK_VALID_FOR, useLink } from './links.ts';
import { hashPassword, passwordProblem } from './passwords.ts';
import { endAllSessions } from './sessions.ts';
import { clearAccountGuesses, countEmailRequest } from './throttle.ts';
import { findUserById, findUserRow, setPasswordHash, type User } from './users.ts';

export const SEND_ACCOUNT_LINK_JOB = 'accounts.send-link';

/** The links a visitor asks for by address, before signing in. */
export type EmailedLinkPurpose = 'sign_in' | 'password_reset';

interface SendAccountLinkPayload {
  purpose: EmailedLinkPurpose;
  email: string;
}

/** Where each link opens in the app. */
export function accountLinkUrl(
  baseUrl: string,
  purpose: EmailedLinkPurpose | 'email_change',
  secret: string,
) {
  const path = {
    sign_in: '/sign-in/link',
    password_reset: '/password-reset/link',
    email_change: '/account/email',
  }[purpose];
  return `${baseUrl}${path}/${secret}`;
}

/**
 * Asks for a sign-in or password-reset link to be emailed to an address. The request does the
 * same work whatever the address (counts it against the throttle, queues one job), so neither
 * its answer nor its timing tells whether the address has an account; the job sends the link
 * only to an existing account.
 */
export async function requestEmailedLink(
  deps: { db: Db; clock: Clock },
  input: { purpose: EmailedLinkPurpose; email: string; ip: string },
): Promise<Result<void, { code: 'throttled'; retryAfterMs: number }>> {
  const now = deps.clock.now();
  const verdict = await countEmailRequest(deps.db, now.getTime(), input);
  if (!verdict.allowed) return err({ code: 'throttled', retryAfterMs: verdict.retryAfterMs });
  await enqueueJob(deps.db, now, {
    kind: SEND_ACCOUNT_LINK_JOB,
    payload: { purpose: input.purpose, email: input.email } satisfies SendAccountLinkPayload,
    maxAttempts: 5,
  });
  return ok(undefined);
}

/** The job behind `requestEmailedLink`: a link and its email for an existing account, nothing otherwise. */
export function sendAccountLinkJob(deps: { db: Db; clock: Clock; baseUrl: string }): JobDefinition {
  return {
    async run(payload) {
      const { purpose, email } = payload as SendAccountLinkPayload;
      const user = await findUserRow(deps.db, email);
      if (!user) return;
      await inTransaction(deps.db, async (trx) => {
        const { secret } = await issueLink(trx, deps.clock, { userId: user.id, purpose });
        const link = {
          url: accountLinkUrl(deps.baseUrl, purpose, secret),
          validFor: LINK_VALID_FOR[purpose],
        };
        const mail = purpose === 'sign_in' ? renderSignInLink(link) : renderPasswordReset(link);
        await queueMail(trx, deps.clock, user.email, mail);
      });
    },
  };
}

/** Uses a sign-in link; the account it signs in to, or undefined for an unknown, used or expired link. */
export async function signInWithLink(
  deps: { db: Db; clock: Clock },
  token: string,
): Promise<User | undefined> {
  const link = await useLink(deps.db, deps.clock, 'sign_in', token);
  return link ? findUserById(deps.db, link.userId) : undefined;
}

export async function isUsableLink(
  deps: { db: Db; clock: Clock },
  purpose: EmailedLinkPurpose,
  token: string,
): Promise<boolean> {
  return (await findUsableLink(deps.db, deps.clock, purpose, token)) !== undefined;
}

export type PasswordResetError = { code: 'link_invalid' } | { code: 'weak_password'; message: string };

/**
 * Sets a new password with a reset link. The link's single use, the new hash, the end of every
 * session of the account and of its other unused links, the notice to the account's address and
 * the audit event commit together; the caller then signs the browser in with a new session.
 */
export async function resetPasswordWithLink(
  deps: { db: Db; clock: Clock },
  input: { token: string; password: string },
  recordChange: RecordAccountChange,
): Promise<Result<User, PasswordResetError>> {
  if (!(await isUsableLink(deps, 'password_reset', input.token))) return err({ code: 'link_invalid' });
  const problem = passwordProblem(input.password);
  if (problem) return err({ code: 'weak_password', message: problem });
  const passwordHash = await hashPassword(input.password);
  const userId = await inTransaction(deps.db, async (trx) => {
    const link = await useLink(trx, deps.clock, 'password_reset', input.token);
    const account = link ? await findUserById(trx, link.userId) : undefined;
    if (!account) return undefined;
    await setPasswordHash(trx, deps.clock, account.id, passwordHash);
    await endAllSessions(trx, account.id);
    await cancelUnusedLinks(trx, account.id, ['sign_in', 'password_reset']);
    await queueMail(
      trx,
      deps.clock,
      account.email,
      renderPasswordChanged({ at: deps.clock.now(), how: 'reset_link' }),
    );
    await recordChange(trx, { action: 'account.password_reset', account });
    return account.id;
  });
  const user = userId ? await findUserById(deps.db, userId) : undefined;
  if (!user) return err({ code: 'link_invalid' });
  await clearAccountGuesses(deps.db, user.email);
  return ok(user);
}
