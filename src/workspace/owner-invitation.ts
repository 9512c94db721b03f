import type { AuditSource } from '../audit/index.ts';
import { recordAuditEvent } from '../audit/index.ts';
import { type Param, preparedQuery } from '../db/prepared.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { type InvitationStatus, invitationStatus, reissueInvitation } from './invitations.ts';
import { getWorkspace, type WorkspaceContext } from './service.ts';

/** The owner invitation a purchase sent, as the order page shows it. */
export interface PurchaseOwnerInvitation {
  /** The address the newest one went to (the buyer's, unless an operator changed it). */
  email: string;
  sentAt: Date;
  /** `accepted` once any owner invitation of the purchase was accepted. */
  status: InvitationStatus;
}

const ownerInvitationsOfPurchase = preparedQuery((db, param: Param<{ workspaceId: string }>) =>
  db
    .selectFrom('workspace_invitations')
    .selectAll()
    .where('workspace_id', '=', param('workspaceId'))
    .where('role', '=', 'owner')
    .where('invited_by_user_id', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc'),
);

/** Owner invitations sent without an inviting account: the purchase's, and their resends. */
async function purchaseOwnerInvitations(db: Db, workspaceId: string) {
  return (await ownerInvitationsOfPurchase(db, { workspaceId })).rows;
}

const termOfOrder = preparedQuery((db, param: Param<{ workspaceId: string; orderId: string }>) =>
  db
    .selectFrom('workspace_terms')
    .select('ended_at')
    .where('workspace_id', '=', param('workspaceId'))
    .where('order_id', '=', param('orderId')),
);

export async function findPurchaseOwnerInvitation(
  db: Db,
  now: Date,
  workspaceId: string,
): Promise<PurchaseOwnerInvitation | undefined> {
  const rows = await purchaseOwnerInvitations(db, workspaceId);
  const newest = rows[0];
  if (!newest) return undefined;
  const accepted = rows.some((row) => row.accepted_at !== null);
  return {
    email: newest.email,
    sentAt: new Date(newest.created_at),
    status: accepted ? 'accepted' : invitationStatus(newest, now.getTime()),
  };
}

/** What became of a purchase after it was paid: the facts its order's state is made of. */
export interface PurchaseFollowUp {
  /** When the purchase's owner invitation was emailed (queued with the workspace). */
  invitationSentAt: Date | null;
  /** When the first of its owner invitations (the purchase's or a resend) was accepted. */
  invitationAcceptedAt: Date | null;
  /** When the term the order paid for was closed by the term-end sweep. */
  termEndedAt: Date | null;
}

export async function findPurchaseFollowUp(
  db: Db,
  workspaceId: string,
  orderId: string,
): Promise<PurchaseFollowUp> {
  // Issued together, the two reads wait for at most one SQLite group commit between them.
  const [invitations, terms] = await Promise.all([
    purchaseOwnerInvitations(db, workspaceId),
    termOfOrder(db, { workspaceId, orderId }),
  ]);
  const accepted = invitations.flatMap((row) => (row.accepted_at === null ? [] : [row.accepted_at]));
  const first = invitations.at(-1);
  const [term] = terms.rows;
  const at = (value: number | null | undefined) =>
    value === null || value === undefined ? null : new Date(value);
  return {
    invitationSentAt: at(first?.created_at),
    invitationAcceptedAt: accepted.length > 0 ? new Date(Math.min(...accepted)) : null,
    termEndedAt: at(term?.ended_at),
  };
}

export type OwnerResendError =
  | { code: 'not_found' }
  | { code: 'accepted' }
  | { code: 'withdrawn' }
  | { code: 'too_many'; retryAfterMs: number };

/**
 * Sends the purchase's owner invitation again, to the same address, while none was accepted:
 * the earlier unused links stop working. Shares the limit of `INVITATIONS_PER_ADDRESS_PER_HOUR`
 * invitations to one address of a workspace per hour, counted in the database.
 */
export async function resendPurchaseOwnerInvitation(
  db: Db,
  ctx: WorkspaceContext,
  workspaceId: string,
  source: AuditSource,
): Promise<Result<{ email: string }, OwnerResendError>> {
  return inTransaction(db, async (trx) => {
    const rows = await purchaseOwnerInvitations(trx, workspaceId);
    const newest = rows[0];
    if (!newest) return err({ code: 'not_found' as const });
    if (rows.some((row) => row.accepted_at !== null)) return err({ code: 'accepted' as const });
    if (newest.withdrawn_at !== null) return err({ code: 'withdrawn' as const });
    const workspace = await getWorkspace(trx, workspaceId);
    if (!workspace) return err({ code: 'not_found' as const });
    const sent = await reissueInvitation(trx, ctx, workspace, { email: newest.email, role: 'owner' });
    if (!sent.ok) return sent;
    await recordAuditEvent(trx, {
      workspaceId,
      action: 'invitation.resent',
      target: { type: 'invitation', id: sent.value.invitationId, label: `${newest.email} (owner)` },
      ...source,
      at: ctx.clock.now(),
    });
    return ok({ email: newest.email });
  });
}
