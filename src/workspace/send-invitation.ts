import { PLANS, type PlanId } from '../catalog/index.ts';
import { insertRow } from '../db/prepared.ts';
import type { Tx } from '../db/schema.ts';
import {
  queueMail,
  renderAuditorInvitation,
  renderOwnerInvitation,
  renderTeamInvitation,
} from '../mail/index.ts';
import { type Clock, DAY_MS } from '../shared/clock.ts';
import { newId, newSecret, sha256Hex } from '../shared/ids.ts';
import type { MemberRole } from './workspace.table.ts';

export const INVITATION_LIFETIME_MS = 7 * DAY_MS;

export interface InvitedWorkspace {
  workspaceId: string;
  workspaceName: string;
  plan: PlanId;
  /** Null on Free. */
  termEndsAt: Date | null;
}

export interface Invitee {
  email: string;
  role: MemberRole;
  /** The owner or admin who invited from the app; absent (null) for a purchase's owner invitation. */
  invitedByUserId?: string | null;
  /** An auditor's access ends then; the invitation link then too, if that comes before its 7 days. */
  accessUntil?: Date | null;
}

/**
 * Records an invitation (only the token's SHA-256) and queues its email, in the caller's
 * transaction: the owner invitation of a new workspace, or a teammate's invitation. Answers the
 * invitation's id.
 */
export async function sendInvitation(
  trx: Tx,
  workspace: InvitedWorkspace,
  invitee: Invitee,
  ctx: { clock: Clock; baseUrl: string },
): Promise<string> {
  const now = ctx.clock.now();
  const token = newSecret('inv_');
  const id = newId('invite', now);
  const accessUntil = invitee.accessUntil ?? null;
  const expiresAt = new Date(
    Math.min(now.getTime() + INVITATION_LIFETIME_MS, accessUntil?.getTime() ?? Number.POSITIVE_INFINITY),
  );
  const invitedByUserId = invitee.invitedByUserId ?? null;
  await insertRow(trx, 'workspace_invitations', {
    id,
    workspace_id: workspace.workspaceId,
    email: invitee.email,
    role: invitee.role,
    token_hash: sha256Hex(token),
    expires_at: expiresAt.getTime(),
    accepted_at: null,
    revoked_at: null,
    invited_by_user_id: invitedByUserId,
    withdrawn_at: null,
    access_until: accessUntil?.getTime() ?? null,
    created_at: now.getTime(),
  });
  const acceptUrl = `${ctx.baseUrl}/invitations/${token}`;
  const mail = accessUntil
    ? renderAuditorInvitation({ workspaceName: workspace.workspaceName, acceptUrl, expiresAt, accessUntil })
    : invitedByUserId === null && invitee.role === 'owner'
      ? renderOwnerInvitation({
          workspaceName: workspace.workspaceName,
          planName: PLANS[workspace.plan].name,
          termEndsAt: workspace.termEndsAt,
          acceptUrl,
          expiresAt,
        })
      : renderTeamInvitation({
          workspaceName: workspace.workspaceName,
          role: invitee.role,
          acceptUrl,
          expiresAt,
        });
  await queueMail(trx, ctx.clock, invitee.email, mail, { workspaceId: workspace.workspaceId });
  return id;
}
