import {
  type CredentialsError,
  checkCredentials,
  createUser,
  findUserByEmail,
  hashPassword,
  normalizeEmail,
  passwordProblem,
  type User,
} from '../accounts/index.ts';
import { userActor } from '../audit/index.ts';
import { inTransaction } from '../db/transaction.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { type AcceptError, acceptInvitation, findInvitation } from '../workspace/index.ts';
import type { WebDeps } from './context.ts';

export type AcceptFailure =
  | { code: AcceptError }
  | { code: 'wrong_account' }
  | { code: 'weak_password'; message: string }
  | { code: 'account_exists' }
  | CredentialsError;

/** How the visitor proves who accepts: the session's account, an existing account's password, or a new password. */
export type AcceptProof =
  | { kind: 'session'; user: User }
  | { kind: 'password'; password: string; ip: string };

/** Thrown inside a transaction to undo it and answer `failure`. */
class Rollback {
  readonly failure: AcceptFailure;
  constructor(failure: AcceptFailure) {
    this.failure = failure;
  }
}

/** Where the visitor is, for the audit log. */
export interface Client {
  ip: string;
  userAgent: string | null;
}

/**
 * Accepts an invitation: by the signed-in account with the invited address, by the existing
 * account of that address (its password), or by creating that account (a new password). The new
 * account and the membership commit together with the invitation's single use, or not at all.
 */
export async function acceptInvitationAs(
  deps: WebDeps,
  token: string,
  proof: AcceptProof,
  client: Client,
): Promise<Result<{ user: User; workspaceId: string }, AcceptFailure>> {
  const invitation = await findInvitation(deps.db, deps, token);
  if (!invitation) return err({ code: 'not_found' });
  if (invitation.status !== 'pending') return err({ code: invitation.status });

  let user: User | undefined;
  if (proof.kind === 'session') {
    if (normalizeEmail(proof.user.email) !== normalizeEmail(invitation.email))
      return err({ code: 'wrong_account' });
    user = proof.user;
  } else if (await findUserByEmail(deps.db, invitation.email)) {
    // The link's holder may learn that its own address has an account: the page says so anyway.
    const checked = await checkCredentials(deps, {
      email: invitation.email,
      password: proof.password,
      ip: proof.ip,
    });
    if (!checked.ok) {
      // A concurrent accept may have created this account and used the link since it was read.
      const now = await findInvitation(deps.db, deps, token);
      if (now && now.status !== 'pending') return err({ code: now.status });
      return err(checked.error);
    }
    user = checked.value;
  }

  if (user) {
    const existing = user;
    const accepted = await inTransaction(deps.db, (trx) =>
      acceptInvitation(trx, deps, { token, userId: existing.id }, { actor: userActor(existing), ...client }),
    );
    return accepted.ok
      ? ok({ user: existing, workspaceId: accepted.value.workspaceId })
      : err({ code: accepted.error });
  }
  return acceptWithNewAccount(
    deps,
    token,
    { email: invitation.email, password: proof.kind === 'password' ? proof.password : '' },
    client,
  );
}

async function acceptWithNewAccount(
  deps: WebDeps,
  token: string,
  { email, password }: { email: string; password: string },
  client: Client,
): Promise<Result<{ user: User; workspaceId: string }, AcceptFailure>> {
  const problem = passwordProblem(password);
  if (problem) return err({ code: 'weak_password', message: problem });
  const passwordHash = await hashPassword(password);
  try {
    return await inTransaction(deps.db, async (trx) => {
      const created = await createUser(trx, deps.clock, { email, passwordHash });
      if (!created.ok) throw new Rollback({ code: 'account_exists' });
      const accepted = await acceptInvitation(
        trx,
        deps,
        { token, userId: created.value.id },
        { actor: userActor(created.value), ...client },
      );
      if (!accepted.ok) throw new Rollback({ code: accepted.error });
      return ok({ user: created.value, workspaceId: accepted.value.workspaceId });
    });
  } catch (error) {
    if (error instanceof Rollback) return err(error.failure);
    throw error;
  }
}
