import type { Db } from '../db/schema.ts';

/**
 * A workspace's members with the address their account has now, not the one they joined with:
 * its holder may have changed it since.
 */
export function membersWithAddress(db: Db, workspaceId: string) {
  return db
    .selectFrom('workspace_members as member')
    .leftJoin('users', 'users.id', 'member.user_id')
    .select((eb) => [
      'member.id',
      'member.role',
      'member.user_id',
      'member.created_at',
      eb.fn.coalesce('users.email', 'member.email').as('email'),
    ])
    .where('member.workspace_id', '=', workspaceId)
    .orderBy('member.created_at')
    .orderBy('member.id');
}
