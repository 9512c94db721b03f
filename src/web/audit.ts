import type { FastifyRequest } from 'fastify';
import type { AccountChange, RecordAccountChange, User } from '../accounts/index.ts';
import {
  type AuditActor,
  type AuditSource,
  recordAuditEvent,
  UNKNOWN_ACTOR,
  userActor,
} from '../audit/index.ts';
import type { Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { listMemberships } from '../workspace/index.ts';
import type { WebDeps } from './context.ts';

/** Who a page's request acts as in the audit log, and from where. */
export function auditSourceOf(request: FastifyRequest, actor: AuditActor): AuditSource {
  return { actor, ip: request.ip, userAgent: request.headers['user-agent'] ?? null };
}

/**
 * Records an event about an account (signed in or out, a failed sign-in, a new password or
 * address, a passkey) in every workspace it belongs to, where the owners and admins see it; an
 * account without a workspace gets one account-level event.
 */
export async function recordAccountEvent(
  trx: Tx,
  deps: WebDeps,
  request: FastifyRequest,
  event: AccountChange & { actor: AuditActor },
): Promise<void> {
  const memberships = await listMemberships(trx, event.account.id);
  const workspaceIds = memberships.length > 0 ? memberships.map((m) => m.workspace.id) : [null];
  const at = deps.clock.now();
  for (const workspaceId of workspaceIds) {
    await recordAuditEvent(trx, {
      workspaceId,
      action: event.action,
      target: event.target ?? { type: 'user', id: event.account.id, label: event.account.email },
      ...auditSourceOf(request, event.actor),
      at,
    });
  }
}

/**
 * What the accounts module records its changes with, inside their transactions: the account
 * itself acting (signed in, or holding a link emailed to it), from this request.
 */
export function accountChangeRecorder(deps: WebDeps, request: FastifyRequest): RecordAccountChange {
  return (trx, change) =>
    recordAccountEvent(trx, deps, request, { ...change, actor: userActor(change.account) });
}

/**
 * A wrong password is recorded against the account of the address (in its workspaces); an address
 * without an account leaves one account-level event with no target, so the address someone typed
 * is not kept.
 */
export async function recordFailedSignIn(
  deps: WebDeps,
  request: FastifyRequest,
  account: { id: string; email: string } | null,
): Promise<void> {
  await inTransaction(deps.db, async (trx) => {
    if (account) {
      await recordAccountEvent(trx, deps, request, {
        action: 'account.sign_in_failed',
        account,
        actor: UNKNOWN_ACTOR,
      });
      return;
    }
    await recordAuditEvent(trx, {
      workspaceId: null,
      action: 'account.sign_in_failed',
      ...auditSourceOf(request, UNKNOWN_ACTOR),
      at: deps.clock.now(),
    });
  });
}

export function userSourceOf(request: FastifyRequest, user: User): AuditSource {
  return auditSourceOf(request, userActor(user));
}
