import type { Db } from '../db/schema.ts';

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
  const member = await db
    .selectFrom('workspace_members')
    .select('email')
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'owner')
    .orderBy('created_at')
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
