import { type AuditSource, recordAuditEvent } from '../audit/index.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { HOUR_MS } from '../shared/clock.ts';
import { newId, sha256Hex } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { releaseFormerAddress, sameAddress } from './member-addresses.ts';
import { type Invitee, sendInvitation } from './send-invitation.ts';
import { getWorkspace, type Workspace, type WorkspaceContext } from './service.ts';
import type { MemberRole } from './workspace.table.ts';

export { INVITATION_LIFETIME_MS } from './send-invitation.ts';
/** Invitations sent to one address of one workspace per hour, the first one included. */
export const INVITATIONS_PER_ADDRESS_PER_HOUR = 3;
const TOKEN_PATTERN = /^inv_[A-Za-z0-9_-]{43}$/;

/** `revoked`: a newer link to the address replaced it; `withdrawn`: an owner or admin took it back (or removed its member). */
export type InvitationStatus = 'pending' | 'expired' | 'accepted' | 'revoked' | 'withdrawn';

export interface Invitation {
  id: string;
  email: string;
  role: MemberRole;
  status: InvitationStatus;
  expiresAt: Date;
  /** An auditor's invitation: the access it gives ends then. */
  accessUntil: Date | null;
  workspace: Workspace;
}

export function invitationStatus(
  row: {
    accepted_at: number | null;
    revoked_at: number | null;
    withdrawn_at: number | null;
    expires_at: number;
  },
  now: number,
): InvitationStatus {
  if (row.withdrawn_at !== null) return 'withdrawn';
  if (row.accepted_at !== null) return 'accepted';
  if (row.revoked_at !== null) return 'revoked';
  if (row.expires_at <= now) return 'expired';
  return 'pending';
}

async function findRow(db: Db, token: string) {
  if (!TOKEN_PATTERN.test(token)) return undefined;
  return db
    .selectFrom('workspace_invitations')
    .selectAll()
    .where('token_hash', '=', sha256Hex(token))
    .executeTakeFirst();
}

/** The invitation an emailed link names, in whatever state it is; undefined for an unknown token. */
export async function findInvitation(
  db: Db,
  ctx: Pick<WorkspaceContext, 'clock'>,
  token: string,
): Promise<Invitation | undefined> {
  const row = await findRow(db, token);
  if (!row) return undefined;
  const workspace = await getWorkspace(db, row.workspace_id);
  if (!workspace) return undefined;
  return {
    id: row.id,
    email: row.email,
    role: row.role,
    status: invitationStatus(row, ctx.clock.now().getTime()),
    expiresAt: new Date(row.expires_at),
    accessUntil: row.access_until === null ? null : new Date(row.access_until),
    workspace,
  };
}

export type AcceptError = 'not_found' | Exclude<InvitationStatus, 'pending'>;

/**
 * Uses the invitation for an account: one conditional update claims it (of two concurrent
 * accepts exactly one changes the row), then the account becomes a member with the invited role
 * (an existing membership of the address from before accounts is attached to the account), and
 * the audit log says who accepted. An account already in the workspace stays as it is, with its
 * role: an invitation never makes a second membership, nor gives back a role taken away. In the
 * caller's transaction, so whatever else it does (creating the account)
 * commits with it or not at all. An auditor invited again (a new date) keeps one membership, with
 * the new date.
 */
export async function acceptInvitation(
  trx: Tx,
  ctx: Pick<WorkspaceContext, 'clock'>,
  input: { token: string; userId: string },
  source: AuditSource,
): Promise<Result<{ workspaceId: string; role: MemberRole }, AcceptError>> {
  const row = await findRow(trx, input.token);
  if (!row) return err('not_found');
  const now = ctx.clock.now().getTime();
  const claimed = await trx
    .updateTable('workspace_invitations')
    .set({ accepted_at: now })
    .where('id', '=', row.id)
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('withdrawn_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  if (claimed.numUpdatedRows === 0n) {
    const current = await trx
      .selectFrom('workspace_invitations')
      .select(['accepted_at', 'revoked_at', 'withdrawn_at', 'expires_at'])
      .where('id', '=', row.id)
      .executeTakeFirstOrThrow();
    const status = invitationStatus(current, now);
    return err(status === 'pending' ? 'accepted' : status);
  }
  const membership = await trx
    .selectFrom('workspace_members')
    .select(['id', 'role'])
    .where('workspace_id', '=', row.workspace_id)
    .where('user_id', '=', input.userId)
    .executeTakeFirst();
  if (membership?.role === 'auditor' && row.role === 'auditor') {
    await trx
      .updateTable('workspace_members')
      .set({ access_until: row.access_until })
      .where('id', '=', membership.id)
      .execute();
  }
  if (!membership) {
    await releaseFormerAddress(trx, row.workspace_id, row.email);
    const joined = await trx
      .insertInto('workspace_members')
      .values({
        id: newId('member', new Date(now)),
        workspace_id: row.workspace_id,
        email: row.email,
        role: row.role,
        user_id: input.userId,
        access_until: row.access_until,
        created_at: now,
      })
      .onConflict((oc) =>
        oc
          .columns(['workspace_id', 'email'])
          .doUpdateSet({ user_id: input.userId })
          .where('workspace_members.user_id', 'is', null),
      )
      .executeTakeFirst();
    if (joined.numInsertedOrUpdatedRows === 0n) {
      throw new Error(
        `invitation ${row.id}: its address is a member of the workspace through another account`,
      );
    }
  }
  await recordAuditEvent(trx, {
    workspaceId: row.workspace_id,
    action: 'invitation.accepted',
    target: { type: 'invitation', id: row.id, label: `${row.email} (${row.role})` },
    ...source,
    at: new Date(now),
  });
  return ok({ workspaceId: row.workspace_id, role: membership?.role ?? row.role });
}

export type ResendError =
  | { code: 'not_found' }
  | { code: 'still_valid' }
  | { code: 'used' }
  | { code: 'withdrawn' }
  | { code: 'too_many'; retryAfterMs: number };

/**
 * Sends a fresh invitation to the address an expired or replaced link was for (same workspace,
 * same role); earlier unused links to that address stop working. A used link asks for nothing
 * more: whoever used it is in the workspace (a removed member's links are withdrawn), and a new
 * invitation would only hold a seat, or offer back a role since taken away. A withdrawn
 * invitation cannot be renewed by its link. At most `INVITATIONS_PER_ADDRESS_PER_HOUR`
 * invitations go to one address of a workspace per hour.
 */
export async function resendInvitation(
  db: Db,
  ctx: WorkspaceContext,
  token: string,
  source: AuditSource,
): Promise<Result<{ email: string }, ResendError>> {
  return inTransaction(db, async (trx) => {
    const row = await findRow(trx, token);
    if (!row) return err({ code: 'not_found' as const });
    const status = invitationStatus(row, ctx.clock.now().getTime());
    if (status === 'pending') return err({ code: 'still_valid' as const });
    if (status === 'accepted') return err({ code: 'used' as const });
    if (status === 'withdrawn') return err({ code: 'withdrawn' as const });
    // An auditor's access that has ended is not offered again by its old link: an owner invites anew.
    if (row.access_until !== null && row.access_until < ctx.clock.now().getTime()) {
      return err({ code: 'withdrawn' as const });
    }
    const workspace = await getWorkspace(trx, row.workspace_id);
    if (!workspace) return err({ code: 'not_found' as const });
    const sent = await reissueInvitation(trx, ctx, workspace, {
      email: row.email,
      role: row.role,
      invitedByUserId: row.invited_by_user_id,
      accessUntil: row.access_until === null ? null : new Date(row.access_until),
    });
    if (!sent.ok) return sent;
    await recordAuditEvent(trx, {
      workspaceId: workspace.id,
      action: 'invitation.resent',
      target: { type: 'invitation', id: sent.value.invitationId, label: `${row.email} (${row.role})` },
      ...source,
      at: ctx.clock.now(),
    });
    return ok({ email: row.email });
  });
}

/**
 * Sends an invitation to the address, replacing (revoking) its earlier unused links to the
 * workspace, unless `INVITATIONS_PER_ADDRESS_PER_HOUR` went to it in the last hour.
 */
export async function reissueInvitation(
  trx: Tx,
  ctx: WorkspaceContext,
  workspace: Workspace,
  invitee: Invitee,
): Promise<Result<{ invitationId: string }, { code: 'too_many'; retryAfterMs: number }>> {
  const now = ctx.clock.now().getTime();
  const recent = await trx
    .selectFrom('workspace_invitations')
    .select('created_at')
    .where('workspace_id', '=', workspace.id)
    .where(sameAddress(invitee.email))
    .where('created_at', '>', now - HOUR_MS)
    .orderBy('created_at')
    .execute();
  const oldest = recent[0];
  if (oldest && recent.length >= INVITATIONS_PER_ADDRESS_PER_HOUR) {
    return err({ code: 'too_many' as const, retryAfterMs: oldest.created_at + HOUR_MS - now });
  }
  await trx
    .updateTable('workspace_invitations')
    .set({ revoked_at: now })
    .where('workspace_id', '=', workspace.id)
    .where(sameAddress(invitee.email))
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
  const invitationId = await sendInvitation(
    trx,
    {
      workspaceId: workspace.id,
      workspaceName: workspace.name,
      plan: workspace.plan,
      // Paid until the end of the last term bought (on Billing, after the one in force).
      termEndsAt: (workspace.nextTerms.at(-1) ?? workspace.currentTerm)?.endsAt ?? null,
    },
    invitee,
    ctx,
  );
  return ok({ invitationId });
}
