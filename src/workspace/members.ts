import { type AuditAction, type AuditSource, recordAuditEvent } from '../audit/index.ts';
import { checkEntitlement, type PlanLimitReached } from '../catalog/index.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { isEmailAddress } from '../shared/email.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { isStorableText } from '../shared/text.ts';
import { invitationStatus, reissueInvitation } from './invitations.ts';
import { lockWorkspace } from './lock.ts';
import { isMemberAddress, membersWithAddress, sameAddress } from './member-addresses.ts';
import { getWorkspace, type Workspace, type WorkspaceContext } from './service.ts';
import type { MemberRole } from './workspace.table.ts';

export interface Membership {
  workspace: Workspace;
  role: MemberRole;
  /** When an auditor's access ends; null for the other roles, whose access has no end date. */
  accessUntil: Date | null;
}

/** Whether the membership gives access at `now`: an auditor's lasts up to its `accessUntil`, inclusive. */
export function hasAccess(membership: Pick<Membership, 'accessUntil'>, now: Date): boolean {
  return membership.accessUntil === null || now.getTime() <= membership.accessUntil.getTime();
}

const accessUntilOf = (row: { access_until: number | null }) =>
  row.access_until === null ? null : new Date(row.access_until);

/** The workspaces an account belongs to, oldest membership first. */
export async function listMemberships(db: Db, userId: string): Promise<Membership[]> {
  const rows = await db
    .selectFrom('workspace_members')
    .select(['workspace_id', 'role', 'access_until'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const memberships: Membership[] = [];
  for (const row of rows) {
    const workspace = await getWorkspace(db, row.workspace_id);
    if (workspace) memberships.push({ workspace, role: row.role, accessUntil: accessUntilOf(row) });
  }
  return memberships;
}

/** Ids come from URLs and forms: one no row can have (PostgreSQL text holds no U+0000) is simply not found. */
export function couldBeId(id: string): boolean {
  return id.length <= MAX_ID_LENGTH && isStorableText(id);
}
const MAX_ID_LENGTH = 100;

/** The account's role in the workspace; undefined when it is not a member (or there is no such workspace). */
export async function findMembership(
  db: Db,
  workspaceId: string,
  userId: string,
): Promise<Membership | undefined> {
  if (!couldBeId(workspaceId)) return undefined;
  const row = await db
    .selectFrom('workspace_members')
    .select(['role', 'access_until'])
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!row) return undefined;
  const workspace = await getWorkspace(db, workspaceId);
  return workspace ? { workspace, role: row.role, accessUntil: accessUntilOf(row) } : undefined;
}

/** Owners and admins manage the workspace: Integrations, Billing and members. */
export function canManageWorkspace(role: MemberRole): boolean {
  return role === 'owner' || role === 'admin';
}

/** The roles `actor` may give, by invitation or by changing a member's role. */
export function assignableRoles(actor: MemberRole): MemberRole[] {
  if (actor === 'owner') return ['owner', 'admin', 'member'];
  if (actor === 'admin') return ['admin', 'member'];
  return [];
}

/** Whether `actor` may change, remove or (for an invitation) resend and revoke someone of role `target`: admins never touch owners. */
export function canManageRole(actor: MemberRole, target: MemberRole): boolean {
  return actor === 'owner' || (actor === 'admin' && target !== 'owner');
}

export interface Member {
  id: string;
  email: string;
  role: MemberRole;
  /** The account that accepted the invitation; null for members added before accounts existed. */
  userId: string | null;
  joinedAt: Date;
}

export interface OpenInvitation {
  id: string;
  email: string;
  role: MemberRole;
  state: 'pending' | 'expired';
  sentAt: Date;
  expiresAt: Date;
  /** Null for the owner invitation of a purchase (or the CLI). */
  invitedByUserId: string | null;
}

/**
 * The workspace's members, owners first, then admins, then members; each group by join date.
 * External auditors are not members of the team: they are listed apart (`listAuditors`).
 */
export async function listMembers(db: Db, workspaceId: string): Promise<Member[]> {
  const rows = await membersWithAddress(db, workspaceId).where('member.role', '!=', 'auditor').execute();
  const rank: Record<MemberRole, number> = { owner: 0, admin: 1, member: 2, auditor: 3 };
  return rows
    .map((row) => ({
      id: row.id,
      email: row.email,
      role: row.role,
      userId: row.user_id,
      joinedAt: new Date(row.created_at),
    }))
    .sort((a, b) => rank[a.role] - rank[b.role]);
}

/**
 * Invitations still waiting for their address (pending or expired, neither accepted, replaced
 * nor withdrawn), newest first: at most one per address, since a new one replaces the last.
 * Auditors' invitations are listed with the auditors.
 */
export async function listOpenInvitations(db: Db, now: Date, workspaceId: string): Promise<OpenInvitation[]> {
  const rows = await db
    .selectFrom('workspace_invitations')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('role', '!=', 'auditor')
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('withdrawn_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    email: row.email,
    role: row.role,
    state: invitationStatus(row, now.getTime()) === 'pending' ? 'pending' : 'expired',
    sentAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    invitedByUserId: row.invited_by_user_id,
  }));
}

export type MemberChangeError =
  /** The acting account is not (or no longer) a member of the workspace. */
  | { code: 'not_member' }
  /** No such member or open invitation in this workspace. */
  | { code: 'not_found' }
  /** The actor's role does not allow it (members manage nothing; admins never touch owners). */
  | { code: 'forbidden' }
  /** It would leave the workspace without an owner. */
  | { code: 'last_owner' }
  | { code: 'already_member' }
  | { code: 'already_owner' }
  | { code: 'invalid_email' }
  | { code: 'too_many'; retryAfterMs: number }
  /** The plan allows no more members and pending invitations. */
  | PlanLimitReached;

type Change<T> = Promise<Result<T, MemberChangeError>>;

export interface MemberRow {
  id: string;
  email: string;
  role: MemberRole;
  user_id: string | null;
}

/**
 * Serializes changes to one workspace's members: a write to the workspace's row (changing
 * nothing) holds its lock until the transaction ends. Two transactions that each demote one of
 * the last two owners then run one after the other, and the second counts one owner, not two
 * (under PostgreSQL's READ COMMITTED a plain count-then-update would let both through). SQLite
 * takes its write lock at BEGIN IMMEDIATE anyway.
 */
export async function lockMembers(trx: Tx, workspaceId: string): Promise<boolean> {
  return (await lockWorkspace(trx, workspaceId)) !== undefined;
}

async function memberBy(trx: Tx, workspaceId: string, by: { userId: string } | { memberId: string }) {
  if ('memberId' in by && !couldBeId(by.memberId)) return undefined;
  // The address the member's account has now (membersWithAddress), which removing withdraws.
  let query = membersWithAddress(trx, workspaceId);
  // A member named by id is one of the team: auditors are changed and removed as auditors only.
  query =
    'userId' in by
      ? query.where('member.user_id', '=', by.userId)
      : query.where('member.id', '=', by.memberId).where('member.role', '!=', 'auditor');
  return (await query.executeTakeFirst()) as MemberRow | undefined;
}

async function ownerCount(trx: Tx, workspaceId: string): Promise<number> {
  const row = await trx
    .selectFrom('workspace_members')
    .select((eb) => eb.fn.countAll().as('owners'))
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'owner')
    .executeTakeFirstOrThrow();
  return Number(row.owners);
}

/**
 * Runs a change to the workspace's members under its lock, with the acting account's membership
 * as it is now (not as the page saw it a moment ago).
 */
export function withActor<T, E extends { code: string } = MemberChangeError>(
  db: Db,
  workspaceId: string,
  actorUserId: string,
  change: (trx: Tx, actor: MemberRow) => Promise<Result<T, NoInfer<E> | { code: 'not_member' }>>,
): Promise<Result<T, E | { code: 'not_member' }>> {
  if (!couldBeId(workspaceId)) return Promise.resolve(err({ code: 'not_member' as const }));
  return inTransaction(db, async (trx): Promise<Result<T, E | { code: 'not_member' }>> => {
    if (!(await lockMembers(trx, workspaceId))) return err({ code: 'not_member' as const });
    const actor = await memberBy(trx, workspaceId, { userId: actorUserId });
    if (!actor) return err({ code: 'not_member' as const });
    return change(trx, actor);
  });
}

/** Records a change to the workspace's members in its transaction: who did it, to whom, from where. */
export async function recordMemberEvent(
  trx: Tx,
  ctx: Pick<WorkspaceContext, 'clock'>,
  workspaceId: string,
  event: {
    action: AuditAction;
    target: { type: 'invitation' | 'member' | 'auditor'; id: string; label: string };
  },
  source: AuditSource,
): Promise<void> {
  await recordAuditEvent(trx, { workspaceId, ...event, ...source, at: ctx.clock.now() });
}

export const invitationLabel = (invitation: { email: string; role: MemberRole }) =>
  `${invitation.email} (${invitation.role})`;
const roleChangeLabel = (change: { email: string; from: MemberRole; to: MemberRole }) =>
  `${change.email}: ${change.from} → ${change.to}`;

/**
 * Withdraws every invitation of the address to the workspace that is still open (or, with
 * `includingAccepted`, every one: a removed member's old link can then not ask for a new one).
 */
export async function withdrawInvitations(
  trx: Tx,
  workspaceId: string,
  email: string,
  now: number,
  options: { includingAccepted: boolean },
): Promise<void> {
  let query = trx
    .updateTable('workspace_invitations')
    .set({ withdrawn_at: now })
    .where('workspace_id', '=', workspaceId)
    .where(sameAddress(email))
    .where('withdrawn_at', 'is', null);
  if (!options.includingAccepted) query = query.where('accepted_at', 'is', null);
  await query.execute();
}

/**
 * The people a workspace holds of one kind (its team, or its external auditors): memberships, and
 * invitations still pending (neither accepted, replaced, withdrawn nor expired) except one to
 * `email`, which a new invitation replaces. The team counts against the plan's members; auditors
 * take no seat and have a cap of their own.
 */
export async function peopleHeld(
  trx: Tx,
  kind: 'team' | 'auditors',
  workspaceId: string,
  email: string,
  now: number,
): Promise<number> {
  const roleIs = kind === 'auditors' ? '=' : '!=';
  const members = await trx
    .selectFrom('workspace_members')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('workspace_id', '=', workspaceId)
    .where('role', roleIs, 'auditor')
    .executeTakeFirstOrThrow();
  const invitations = await trx
    .selectFrom('workspace_invitations')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('workspace_id', '=', workspaceId)
    .where('role', roleIs, 'auditor')
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('withdrawn_at', 'is', null)
    .where('expires_at', '>', now)
    .where((eb) => eb.not(sameAddress(email)(eb)))
    .executeTakeFirstOrThrow();
  return Number(members.count) + Number(invitations.count);
}

export interface MemberInvitationInput {
  workspaceId: string;
  actorUserId: string;
  email: string;
  role: MemberRole;
}

/**
 * An owner or admin invites a teammate by email with a role they may give (admins: admin or
 * member; owners also owner), through the same invitation as the owner's: single use, 7 days,
 * stored hashed. A newer invitation to the address replaces an unused one.
 */
export function inviteMember(
  db: Db,
  ctx: WorkspaceContext,
  input: MemberInvitationInput,
  source: AuditSource,
): Change<{ email: string }> {
  const email = input.email.trim();
  return withActor(db, input.workspaceId, input.actorUserId, async (trx, actor) => {
    if (!assignableRoles(actor.role).includes(input.role)) return err({ code: 'forbidden' as const });
    if (!isEmailAddress(email)) return err({ code: 'invalid_email' as const });
    if (await isMemberAddress(trx, input.workspaceId, email)) return err({ code: 'already_member' as const });
    const workspace = await getWorkspace(trx, input.workspaceId);
    if (!workspace) return err({ code: 'not_member' as const });
    const seats = await peopleHeld(trx, 'team', input.workspaceId, email, ctx.clock.now().getTime());
    const refusal = checkEntitlement(workspace.plan, 'members', seats);
    if (refusal) return err(refusal);
    const sent = await reissueInvitation(trx, ctx, workspace, {
      email,
      role: input.role,
      invitedByUserId: actor.user_id,
    });
    if (!sent.ok) return sent;
    await recordMemberEvent(
      trx,
      ctx,
      workspace.id,
      {
        action: 'member.invited',
        target: {
          type: 'invitation',
          id: sent.value.invitationId,
          label: invitationLabel({ email, role: input.role }),
        },
      },
      source,
    );
    return ok({ email });
  });
}

async function openInvitation(trx: Tx, workspaceId: string, invitationId: string) {
  if (!couldBeId(invitationId)) return undefined;
  return trx
    .selectFrom('workspace_invitations')
    .select(['id', 'email', 'role', 'invited_by_user_id'])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', invitationId)
    .where('role', '!=', 'auditor')
    .where('accepted_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('withdrawn_at', 'is', null)
    .executeTakeFirst();
}

/** An open invitation of the workspace that the actor's role may resend or withdraw. */
async function manageableInvitation(trx: Tx, workspaceId: string, invitationId: string, actor: MemberRow) {
  if (!canManageWorkspace(actor.role)) return err({ code: 'forbidden' as const });
  const invitation = await openInvitation(trx, workspaceId, invitationId);
  if (!invitation) return err({ code: 'not_found' as const });
  if (!canManageRole(actor.role, invitation.role)) return err({ code: 'forbidden' as const });
  return ok(invitation);
}

/** Sends a pending (or expired) invitation again with a fresh link; the old link stops working. */
export function resendMemberInvitation(
  db: Db,
  ctx: WorkspaceContext,
  input: { workspaceId: string; actorUserId: string; invitationId: string },
  source: AuditSource,
): Change<{ email: string }> {
  return withActor(db, input.workspaceId, input.actorUserId, async (trx, actor) => {
    const managed = await manageableInvitation(trx, input.workspaceId, input.invitationId, actor);
    if (!managed.ok) return managed;
    const invitation = managed.value;
    const workspace = await getWorkspace(trx, input.workspaceId);
    if (!workspace) return err({ code: 'not_member' as const });
    const sent = await reissueInvitation(trx, ctx, workspace, {
      email: invitation.email,
      role: invitation.role,
      invitedByUserId: invitation.invited_by_user_id,
    });
    if (!sent.ok) return sent;
    await recordMemberEvent(
      trx,
      ctx,
      workspace.id,
      {
        action: 'member.invitation_resent',
        target: { type: 'invitation', id: sent.value.invitationId, label: invitationLabel(invitation) },
      },
      source,
    );
    return ok({ email: invitation.email });
  });
}

/** Withdraws a pending (or expired) invitation: its link, and any older one to the address, stops working. */
export function revokeMemberInvitation(
  db: Db,
  ctx: WorkspaceContext,
  input: { workspaceId: string; actorUserId: string; invitationId: string },
  source: AuditSource,
): Change<{ email: string }> {
  return withActor(db, input.workspaceId, input.actorUserId, async (trx, actor) => {
    const managed = await manageableInvitation(trx, input.workspaceId, input.invitationId, actor);
    if (!managed.ok) return managed;
    const invitation = managed.value;
    await withdrawInvitations(trx, input.workspaceId, invitation.email, ctx.clock.now().getTime(), {
      includingAccepted: false,
    });
    await recordMemberEvent(
      trx,
      ctx,
      input.workspaceId,
      {
        action: 'member.invitation_revoked',
        target: { type: 'invitation', id: invitation.id, label: invitationLabel(invitation) },
      },
      source,
    );
    return ok({ email: invitation.email });
  });
}

export interface RoleChange {
  memberId: string;
  email: string;
  from: MemberRole;
  to: MemberRole;
}

/**
 * Gives a member another role. Owners change anyone (themselves included) to any role; admins
 * change admins and members to admin or member. The last owner keeps the owner role.
 */
export function changeMemberRole(
  db: Db,
  ctx: Pick<WorkspaceContext, 'clock'>,
  input: { workspaceId: string; actorUserId: string; memberId: string; role: MemberRole },
  source: AuditSource,
): Change<RoleChange> {
  return withActor(db, input.workspaceId, input.actorUserId, async (trx, actor) => {
    if (!canManageWorkspace(actor.role)) return err({ code: 'forbidden' as const });
    const target = await memberBy(trx, input.workspaceId, { memberId: input.memberId });
    if (!target) return err({ code: 'not_found' as const });
    if (!canManageRole(actor.role, target.role) || !assignableRoles(actor.role).includes(input.role)) {
      return err({ code: 'forbidden' as const });
    }
    if (
      target.role === 'owner' &&
      input.role !== 'owner' &&
      (await ownerCount(trx, input.workspaceId)) <= 1
    ) {
      return err({ code: 'last_owner' as const });
    }
    await trx
      .updateTable('workspace_members')
      .set({ role: input.role })
      .where('id', '=', target.id)
      .execute();
    const change = { memberId: target.id, email: target.email, from: target.role, to: input.role };
    await recordMemberEvent(
      trx,
      ctx,
      input.workspaceId,
      {
        action: 'member.role_changed',
        target: { type: 'member', id: target.id, label: roleChangeLabel(change) },
      },
      source,
    );
    return ok(change);
  });
}

export interface RemovedMember {
  memberId: string;
  email: string;
  role: MemberRole;
}

export async function deleteMember(
  trx: Tx,
  ctx: Pick<WorkspaceContext, 'clock'>,
  workspaceId: string,
  member: MemberRow,
  audit: { action: 'member.removed' | 'member.left' | 'auditor.access_revoked'; source: AuditSource },
): Promise<RemovedMember> {
  await trx.deleteFrom('workspace_members').where('id', '=', member.id).execute();
  await withdrawInvitations(trx, workspaceId, member.email, ctx.clock.now().getTime(), {
    includingAccepted: true,
  });
  await recordMemberEvent(
    trx,
    ctx,
    workspaceId,
    {
      action: audit.action,
      target: {
        type: member.role === 'auditor' ? 'auditor' : 'member',
        id: member.id,
        label: invitationLabel(member),
      },
    },
    audit.source,
  );
  return { memberId: member.id, email: member.email, role: member.role };
}

/**
 * Removes a member (owners remove anyone, admins admins and members; never the last owner). Their
 * access ends with the transaction: every page of the workspace checks membership on each request.
 * Their invitation links are withdrawn, so an old link cannot bring them back.
 */
export function removeMember(
  db: Db,
  ctx: WorkspaceContext,
  input: { workspaceId: string; actorUserId: string; memberId: string },
  source: AuditSource,
): Change<RemovedMember> {
  return withActor(db, input.workspaceId, input.actorUserId, async (trx, actor) => {
    if (!canManageWorkspace(actor.role)) return err({ code: 'forbidden' as const });
    const target = await memberBy(trx, input.workspaceId, { memberId: input.memberId });
    if (!target) return err({ code: 'not_found' as const });
    if (!canManageRole(actor.role, target.role)) return err({ code: 'forbidden' as const });
    if (target.role === 'owner' && (await ownerCount(trx, input.workspaceId)) <= 1) {
      return err({ code: 'last_owner' as const });
    }
    return ok(await deleteMember(trx, ctx, input.workspaceId, target, { action: 'member.removed', source }));
  });
}

/** The account leaves the workspace, whatever its role, unless it is the last owner. */
export function leaveWorkspace(
  db: Db,
  ctx: WorkspaceContext,
  input: { workspaceId: string; userId: string },
  source: AuditSource,
): Change<RemovedMember> {
  return withActor(db, input.workspaceId, input.userId, async (trx, actor) => {
    if (actor.role === 'owner' && (await ownerCount(trx, input.workspaceId)) <= 1) {
      return err({ code: 'last_owner' as const });
    }
    return ok(await deleteMember(trx, ctx, input.workspaceId, actor, { action: 'member.left', source }));
  });
}

export interface OwnershipTransfer {
  newOwner: RoleChange;
  /** The owner who stepped down to admin; null when they stayed an owner. */
  previousOwner: RoleChange | null;
}

/**
 * An owner makes another member an owner and, with `stepDown`, becomes an admin, in one
 * transaction: the workspace is never without an owner, nor briefly with the old one only.
 */
export function transferOwnership(
  db: Db,
  ctx: Pick<WorkspaceContext, 'clock'>,
  input: { workspaceId: string; actorUserId: string; memberId: string; stepDown: boolean },
  source: AuditSource,
): Change<OwnershipTransfer> {
  return withActor<OwnershipTransfer>(db, input.workspaceId, input.actorUserId, async (trx, actor) => {
    if (actor.role !== 'owner') return err({ code: 'forbidden' as const });
    const target = await memberBy(trx, input.workspaceId, { memberId: input.memberId });
    if (!target) return err({ code: 'not_found' as const });
    if (target.role === 'owner') return err({ code: 'already_owner' as const });
    await trx.updateTable('workspace_members').set({ role: 'owner' }).where('id', '=', target.id).execute();
    const newOwner = { memberId: target.id, email: target.email, from: target.role, to: 'owner' as const };
    let previousOwner: RoleChange | null = null;
    if (input.stepDown) {
      await trx.updateTable('workspace_members').set({ role: 'admin' }).where('id', '=', actor.id).execute();
      previousOwner = { memberId: actor.id, email: actor.email, from: 'owner', to: 'admin' };
    }
    const label = [newOwner, ...(previousOwner ? [previousOwner] : [])].map(roleChangeLabel).join('; ');
    await recordMemberEvent(
      trx,
      ctx,
      input.workspaceId,
      { action: 'member.ownership_transferred', target: { type: 'member', id: target.id, label } },
      source,
    );
    return ok({ newOwner, previousOwner });
  });
}
