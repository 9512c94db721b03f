import type { PlanId, TermLength } from '../catalog/index.ts';
import type { Db } from '../db/schema.ts';
import { type InvitationStatus, invitationStatus } from './invitations.ts';
import type { MemberRole } from './workspace.table.ts';

export interface WorkspaceSummary {
  id: string;
  name: string;
  plan: PlanId;
  createdAt: Date;
  /** The end of the term in force; null on Free. */
  termEndsAt: Date | null;
  /** The newest owner invitation: to whom, and whether it was taken up. */
  owner: { email: string; invitation: InvitationStatus } | null;
}

export interface TermRecord {
  plan: PlanId;
  term: TermLength;
  startsAt: Date;
  endsAt: Date;
  channel: string;
  orderId: string;
  /** When the term-end sweep closed it; null while in force. */
  endedAt: Date | null;
}

export interface InvitationRecord {
  id: string;
  email: string;
  role: MemberRole;
  state: InvitationStatus;
  createdAt: Date;
  expiresAt: Date;
  acceptedAt: Date | null;
}

export interface WorkspaceDetails {
  id: string;
  name: string;
  plan: PlanId;
  createdAt: Date;
  /** Newest first. */
  terms: TermRecord[];
  members: { email: string; role: MemberRole; joinedAt: Date }[];
  /** Newest first. */
  invitations: InvitationRecord[];
}

/**
 * Workspaces newest first, for operators; `email` keeps those where the address was invited or
 * is a member (compared without case).
 */
export async function listWorkspaces(
  db: Db,
  now: Date,
  options: { limit: number; email?: string | undefined },
): Promise<WorkspaceSummary[]> {
  let query = db
    .selectFrom('workspaces')
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit);
  const email = options.email?.toLowerCase();
  if (email !== undefined) {
    query = query.where((eb) =>
      eb.or([
        eb(
          'id',
          'in',
          eb
            .selectFrom('workspace_invitations')
            .select('workspace_id')
            .where((sub) => sub(sub.fn('lower', ['email']), '=', email)),
        ),
        eb(
          'id',
          'in',
          eb
            .selectFrom('workspace_members')
            .select('workspace_id')
            .where((sub) => sub(sub.fn('lower', ['email']), '=', email)),
        ),
      ]),
    );
  }
  const workspaces = await query.execute();
  if (workspaces.length === 0) return [];
  const ids = workspaces.map((workspace) => workspace.id);
  const openTerms = await db
    .selectFrom('workspace_terms')
    .select(['workspace_id', 'ends_at'])
    .where('workspace_id', 'in', ids)
    .where('ended_at', 'is', null)
    .execute();
  const ownerInvitations = await db
    .selectFrom('workspace_invitations')
    .select(['workspace_id', 'email', 'accepted_at', 'revoked_at', 'withdrawn_at', 'expires_at'])
    .where('workspace_id', 'in', ids)
    .where('role', '=', 'owner')
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const termEnds = new Map<string, number>();
  for (const term of openTerms) {
    termEnds.set(term.workspace_id, Math.max(term.ends_at, termEnds.get(term.workspace_id) ?? 0));
  }
  const newestOwnerInvitation = new Map(ownerInvitations.map((row) => [row.workspace_id, row]));
  return workspaces.map((workspace) => {
    const termEndsAt = termEnds.get(workspace.id);
    const invitation = newestOwnerInvitation.get(workspace.id);
    return {
      id: workspace.id,
      name: workspace.name,
      plan: workspace.plan,
      createdAt: new Date(workspace.created_at),
      termEndsAt: termEndsAt === undefined ? null : new Date(termEndsAt),
      owner: invitation
        ? { email: invitation.email, invitation: invitationStatus(invitation, now.getTime()) }
        : null,
    };
  });
}

/** A workspace with all its terms, members and invitations; undefined if there is none. */
export async function describeWorkspace(
  db: Db,
  now: Date,
  workspaceId: string,
): Promise<WorkspaceDetails | undefined> {
  const workspace = await db
    .selectFrom('workspaces')
    .selectAll()
    .where('id', '=', workspaceId)
    .executeTakeFirst();
  if (!workspace) return undefined;
  const terms = await db
    .selectFrom('workspace_terms')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('starts_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  const members = await db
    .selectFrom('workspace_members')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const invitations = await db
    .selectFrom('workspace_invitations')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return {
    id: workspace.id,
    name: workspace.name,
    plan: workspace.plan,
    createdAt: new Date(workspace.created_at),
    terms: terms.map((term) => ({
      plan: term.plan,
      term: term.term,
      startsAt: new Date(term.starts_at),
      endsAt: new Date(term.ends_at),
      channel: term.channel,
      orderId: term.order_id,
      endedAt: term.ended_at === null ? null : new Date(term.ended_at),
    })),
    members: members.map((member) => ({
      email: member.email,
      role: member.role,
      joinedAt: new Date(member.created_at),
    })),
    invitations: invitations.map((invitation) => ({
      id: invitation.id,
      email: invitation.email,
      role: invitation.role,
      state: invitationStatus(invitation, now.getTime()),
      createdAt: new Date(invitation.created_at),
      expiresAt: new Date(invitation.expires_at),
      acceptedAt: invitation.accepted_at === null ? null : new Date(invitation.accepted_at),
    })),
  };
}
