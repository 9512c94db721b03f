import { type ExpressionBuilder, type RawBuilder, sql } from 'kysely';
import { accountEmailOf } from '../accounts/index.ts';
import type { Database, Db, Tx } from '../db/schema.ts';

/** A filter on the `email` of invitations or members: the same address, compared without case. */
export function sameAddress(email: string) {
  const key = email.trim().toLowerCase();
  return <T extends 'workspace_invitations' | 'workspace_members'>(eb: ExpressionBuilder<Database, T>) =>
    eb(eb.fn<string>('lower', [eb.ref('email')]), '=', key);
}

/**
 * A workspace's members with the address their account has now, not the one they joined with:
 * its holder may have changed it since.
 */
export function membersWithAddress(db: Db, workspaceId: string) {
  return db
    .selectFrom('workspace_members as member')
    .select(['member.id', 'member.role', 'member.user_id', 'member.created_at', memberAddress().as('email')])
    .where('member.workspace_id', '=', workspaceId)
    .orderBy('member.created_at')
    .orderBy('member.id');
}

/**
 * The address of a member of `membersWithAddress` (`member`): its account's now, or the one it was
 * invited with while it has no account.
 */
export function memberAddress(): RawBuilder<string> {
  return sql<string>`coalesce(${accountEmailOf('member.user_id')}, ${sql.ref('member.email')})`;
}

/** Whether someone of the workspace has `email` as their address now (compared without case). */
export async function isMemberAddress(db: Db, workspaceId: string, email: string): Promise<boolean> {
  const found = await membersWithAddress(db, workspaceId)
    .where((eb) => eb(eb.fn('lower', [memberAddress()]), '=', email.trim().toLowerCase()))
    .executeTakeFirst();
  return found !== undefined;
}

/**
 * Gives the memberships that still carry `email` from when their account joined, but whose
 * account has another address now, that address: `email` is then free for whoever accepts an
 * invitation to it, instead of taking over the old holder's membership.
 */
export async function releaseFormerAddress(trx: Tx, workspaceId: string, email: string): Promise<void> {
  const accountAddress = accountEmailOf('workspace_members.user_id');
  await trx
    .updateTable('workspace_members')
    .set({ email: sql<string>`${accountAddress}` })
    .where('workspace_id', '=', workspaceId)
    .where(sameAddress(email))
    .where('user_id', 'is not', null)
    // Null (no account) is neither equal nor unequal: such a row is left alone.
    .where(sql<boolean>`lower(${accountAddress}) <> ${email.trim().toLowerCase()}`)
    .where(({ not }) => not(addressHeldByAnother(accountAddress)))
    .execute();
}

/**
 * Whether another membership of the row's workspace holds `address` (rows from before addresses
 * followed their accounts can): a move onto it would break the unique address per workspace, so
 * such a row keeps its old address rather than fail the change that moves it.
 */
function addressHeldByAnother(address: RawBuilder<unknown>) {
  return sql<boolean>`exists (select 1 from workspace_members as other where other.workspace_id = workspace_members.workspace_id and other.id <> workspace_members.id and lower(other.email) = lower(${address}))`;
}

/**
 * Moves the account's memberships to its new address, in the address change's transaction, so a
 * member's address is the one its account has (inviting it again is refused as a member; the old
 * one is free for whoever holds it next). A membership still holding the new address from before
 * addresses followed (its account has another one now) is moved to its own account's first.
 */
export async function memberAddressChanged(trx: Tx, userId: string, newEmail: string): Promise<void> {
  const holders = await trx
    .selectFrom('workspace_members')
    .select('workspace_id')
    .where(sameAddress(newEmail))
    .where('user_id', '<>', userId)
    .execute();
  for (const { workspace_id } of holders) await releaseFormerAddress(trx, workspace_id, newEmail);
  await trx
    .updateTable('workspace_members')
    .set({ email: newEmail })
    .where('user_id', '=', userId)
    .where(({ not }) => not(addressHeldByAnother(sql`${newEmail}`)))
    .execute();
}
