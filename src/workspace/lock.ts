import type { PlanId } from '../catalog/index.ts';
import type { Db, Tx } from '../db/schema.ts';

/** What a change made under the workspace's lock may go by. */
export interface LockedWorkspace {
  plan: PlanId;
  name: string;
}

/**
 * Takes the workspace's row until the transaction ends (a write changing nothing) and answers its
 * plan and name; undefined when there is no such workspace. Every change that counts against the
 * plan (API keys, webhook subscriptions, evidence storage), changes the plan or its terms, the
 * members or the name takes it first, so two of them on one workspace run one after the other:
 * under PostgreSQL's READ COMMITTED a plain count-then-insert would let both through (SQLite takes
 * its write lock at BEGIN IMMEDIATE anyway).
 */
export async function lockWorkspace(trx: Tx, workspaceId: string): Promise<LockedWorkspace | undefined> {
  return trx
    .updateTable('workspaces')
    .set((eb) => ({ id: eb.ref('id') }))
    .where('id', '=', workspaceId)
    .returning(['plan', 'name'])
    .executeTakeFirst();
}

/** The workspace's plan as it stands, without a lock; undefined when there is no such workspace. */
export async function findWorkspacePlan(db: Db, workspaceId: string): Promise<PlanId | undefined> {
  const row = await db
    .selectFrom('workspaces')
    .select('plan')
    .where('id', '=', workspaceId)
    .executeTakeFirst();
  return row?.plan;
}
