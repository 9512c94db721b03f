import type { AuditSource } from '../audit/index.ts';
import type { Db, Tx } from '../db/schema.ts';
import { DAY_MS } from '../shared/clock.ts';
import { isEmailAddress } from '../shared/email.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { invitationStatus, reissueInvitation } from './invitations.ts';
import { memberAddress, membersWithAddress } from './member-addresses.ts';
import {
  couldBeId,
  deleteMember,
  invitationLabel,
  type MemberRow,
  peopleHeld,
  recordMemberEvent,
  withActor,
  withdrawInvitations,
} from './members.ts';
import { getWorkspace, type WorkspaceContext } from './service.ts';

/** The furthest date an auditor's access may run to, counted from today: an audit, not a tenure. */
export const AUDITOR_ACCESS_MAX_DAYS = 366;
/** Auditors (whose access may have ended) and pending auditor invitations a workspace holds at once. */
export const AUDITORS_MAX = 25;

const DATE_PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * The last instant of access for a calendar date (`YYYY-MM-DD`, UTC): the auditor keeps access
 * through that whole day. Undefined for a date that does not exist.
 */
export function accessUntilOfDate(date: string): Date | undefined {
  const parts = DATE_PATTERN.exec(date);
  if (!parts) return undefined;
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  const start = Date.UTC(year, month - 1, day);
  const check = new Date(start);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day) {
    return undefined;
  }
  return new Date(start + DAY_MS - 1);
}

export type AuditorChangeError =
  | { code: 'not_member' }
  | { code: 'not_found' }
  /** Only owners invite auditors and end their access. */
  | { code: 'forbidden' }
  /** The address belongs to a member of the team, who sees the workspace already. */
  | { code: 'already_member' }
  | { code: 'invalid_email' }
  /** Not a date, in the past, or further than `AUDITOR_ACCESS_MAX_DAYS` away. */
  | { code: 'invalid_date' }
  /** `AUDITORS_MAX` auditors and pending invitations already: remove one first. */
  | { code: 'too_many_auditors' }
  | { code: 'too_many'; retryAfterMs: number };

type Change<T> = Promise<Result<T, AuditorChangeError>>;

async function ownerActing<T>(
  db: Db,
  workspaceId: string,
  actorUserId: string,
  change: (trx: Tx, actor: MemberRow) => Change<T>,
): Change<T> {
  return withActor<T, AuditorChangeError>(db, workspaceId, actorUserId, async (trx, actor) => {
    if (actor.role !== 'owner') return err({ code: 'forbidden' as const });
    return change(trx, actor);
  });
}

/**
 * An owner invites an external auditor by email, with read-only access to this workspace through
 * `accessUntil` (a calendar date, UTC). The invitation is the members' one (single use, stored
 * hashed, the same mail outbox), its link valid for 7 days or until the access ends if sooner. An
 * auditor takes no seat of the plan. Inviting an auditor again sets a new date once accepted.
 */
export function inviteAuditor(
  db: Db,
  ctx: WorkspaceContext,
  input: { workspaceId: string; actorUserId: string; email: string; accessUntil: string },
  source: AuditSource,
): Change<{ email: string; accessUntil: Date }> {
  const email = input.email.trim();
  return ownerActing(db, input.workspaceId, input.actorUserId, async (trx, actor) => {
    if (!isEmailAddress(email)) return err({ code: 'invalid_email' as const });
    const now = ctx.clock.now().getTime();
    const accessUntil = accessUntilOfDate(input.accessUntil);
    if (
      !accessUntil ||
      accessUntil.getTime() < now ||
      accessUntil.getTime() > now + AUDITOR_ACCESS_MAX_DAYS * DAY_MS
    ) {
      return err({ code: 'invalid_date' as const });
    }
    const holder = await membersWithAddress(trx, input.workspaceId)
      .where((eb) => eb(eb.fn('lower', [memberAddress()]), '=', email.toLowerCase()))
      .executeTakeFirst();
    if (holder && holder.role !== 'auditor') return err({ code: 'already_member' as const });
    if (!holder && (await peopleHeld(trx, 'auditors', input.workspaceId, email, now)) >= AUDITORS_MAX) {
      return err({ code: 'too_many_auditors' as const });
    }
    const workspace = await getWorkspace(trx, input.workspaceId);
    if (!workspace) return err({ code: 'not_member' as const });
    const sent = await reissueInvitation(trx, ctx, workspace, {
      email,
      role: 'auditor',
      invitedByUserId: actor.user_id,
      accessUntil,
    });
    if (!sent.ok) return sent;
    await recordMemberEvent(
      trx,
      ctx,
      workspace.id,
      {
        action: 'auditor.invited',
        target: { type: 'invitation', id: sent.value.invitationId, label: auditorLabel(email, accessUntil) },
      },
      source,
    );
    return ok({ email, accessUntil });
  });
}

const auditorLabel = (email: string, accessUntil: Date) =>
  `${email} (auditor until ${accessUntil.toISOString().slice(0, 10)})`;

export interface Auditor {
  /** The membership's id. */
  id: string;
  email: string;
  accessUntil: Date;
  joinedAt: Date;
  state: 'active' | 'ended';
}

export interface AuditorInvitation {
  id: string;
  email: string;
  accessUntil: Date;
  sentAt: Date;
  expiresAt: Date;
  state: 'pending' | 'expired';
}

/**
 * The workspace's auditors (those whose date has passed too, until an owner removes them), newest
 * first, and the auditors' invitations still open.
 */
export async function listAuditors(
  db: Db,
  now: Date,
  workspaceId: string,
): Promise<{ auditors: Auditor[]; invitations: AuditorInvitation[] }> {
  const members = await membersWithAddress(db, workspaceId)
    .select('member.access_until')
    .where('member.role', '=', 'auditor')
    .execute();
  const invitations = await db
    .selectFrom('workspace_invitations')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'auditor')
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('withdrawn_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return {
    auditors: members.reverse().map((row) => {
      const accessUntil = new Date(row.access_until ?? 0);
      return {
        id: row.id,
        email: row.email,
        accessUntil,
        joinedAt: new Date(row.created_at),
        state: now.getTime() <= accessUntil.getTime() ? 'active' : 'ended',
      };
    }),
    invitations: invitations.map((row) => ({
      id: row.id,
      email: row.email,
      accessUntil: new Date(row.access_until ?? 0),
      sentAt: new Date(row.created_at),
      expiresAt: new Date(row.expires_at),
      state: invitationStatus(row, now.getTime()) === 'pending' ? 'pending' : 'expired',
    })),
  };
}

/**
 * An owner ends an auditor's access now (or removes one whose date has passed): the membership
 * goes, with the transaction, and its invitation links are withdrawn.
 */
export function revokeAuditor(
  db: Db,
  ctx: WorkspaceContext,
  input: { workspaceId: string; actorUserId: string; memberId: string },
  source: AuditSource,
): Change<{ email: string }> {
  return ownerActing(db, input.workspaceId, input.actorUserId, async (trx) => {
    if (!couldBeId(input.memberId)) return err({ code: 'not_found' as const });
    const auditor = (await membersWithAddress(trx, input.workspaceId)
      .where('member.id', '=', input.memberId)
      .where('member.role', '=', 'auditor')
      .executeTakeFirst()) as MemberRow | undefined;
    if (!auditor) return err({ code: 'not_found' as const });
    await deleteMember(trx, ctx, input.workspaceId, auditor, { action: 'auditor.access_revoked', source });
    return ok({ email: auditor.email });
  });
}

/** An owner withdraws an auditor's invitation that is still open: its link stops working. */
export function revokeAuditorInvitation(
  db: Db,
  ctx: WorkspaceContext,
  input: { workspaceId: string; actorUserId: string; invitationId: string },
  source: AuditSource,
): Change<{ email: string }> {
  return ownerActing(db, input.workspaceId, input.actorUserId, async (trx) => {
    if (!couldBeId(input.invitationId)) return err({ code: 'not_found' as const });
    const invitation = await trx
      .selectFrom('workspace_invitations')
      .select(['id', 'email', 'role'])
      .where('workspace_id', '=', input.workspaceId)
      .where('id', '=', input.invitationId)
      .where('role', '=', 'auditor')
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('withdrawn_at', 'is', null)
      .executeTakeFirst();
    if (!invitation) return err({ code: 'not_found' as const });
    await withdrawInvitations(trx, input.workspaceId, invitation.email, ctx.clock.now().getTime(), {
      includingAccepted: false,
    });
    await recordMemberEvent(
      trx,
      ctx,
      input.workspaceId,
      {
        action: 'auditor.invitation_revoked',
        target: { type: 'invitation', id: invitation.id, label: invitationLabel(invitation) },
      },
      source,
    );
    return ok({ email: invitation.email });
  });
}
