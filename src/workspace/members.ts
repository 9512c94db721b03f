import type { Db } from '../db/schema.ts';
import { getWorkspace, type Workspace } from './service.ts';
import type { MemberRole } from './workspace.table.ts';

export interface Membership {
  workspace: Workspace;
  role: MemberRole;
}

/** The workspaces an account belongs to, oldest membership first. */
export async function listMemberships(db: Db, userId: string): Promise<Membership[]> {
  const rows = await db
    .selectFrom('workspace_members')
    .select(['workspace_id', 'role'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  const memberships: Membership[] = [];
  for (const row of rows) {
    const workspace = await getWorkspace(db, row.workspace_id);
    if (workspace) memberships.push({ workspace, role: row.role });
  }
  return memberships;
}

/** The account's role in the workspace; undefined when it is not a member (or there is no such workspace). */
export async function findMembership(
  db: Db,
  workspaceId: string,
  userId: string,
): Promise<Membership | undefined> {
  const row = await db
    .selectFrom('workspace_members')
    .select('role')
    .where('workspace_id', '=', workspaceId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  if (!row) return undefined;
  const workspace = await getWorkspace(db, workspaceId);
  return workspace ? { workspace, role: row.role } : undefined;
}

/** Owners and admins manage Integrations (and later Billing and members). */
export function canManageWorkspace(role: MemberRole): boolean {
  return role === 'owner' || role === 'admin';
}
