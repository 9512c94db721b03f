import type { Db } from '../db/schema.ts';
import { membersWithAddress } from './member-addresses.ts';

export interface WorkspaceOwner {
  email: string;
  workspaceName: string;
}

/**
 * Whom to tell about the workspace: its owner member when someone has accepted the owner
 * invitation, otherwise the address the newest owner invitation went to.
 */
export async function findWorkspaceOwner(db: Db, workspaceId: string): Promise<WorkspaceOwner | undefined> {
  const workspace = await db
    .selectFrom('workspaces')
    .select('name')
    .where('id', '=', workspaceId)
    .executeTakeFirst();
  if (!workspace) return undefined;
  const member = await membersWithAddress(db, workspaceId)
    .where('member.role', '=', 'owner')
    .executeTakeFirst();
  const invited =
    member ??
    (await db
      .selectFrom('workspace_invitations')
      .select('email')
      .where('workspace_id', '=', workspaceId)
      .where('role', '=', 'owner')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirst());
  return invited ? { email: invited.email, workspaceName: workspace.name } : undefined;
}
