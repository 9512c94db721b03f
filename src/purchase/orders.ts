import type { Db } from '../db/schema.ts';
import { type Order, toOrder } from './pipeline.ts';

/** Orders newest first, for operators; optionally those of one workspace. */
export async function listOrders(
  db: Db,
  options: { limit: number; workspaceId?: string | undefined },
): Promise<Order[]> {
  let query = db
    .selectFrom('orders')
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(options.limit);
  if (options.workspaceId !== undefined) query = query.where('workspace_id', '=', options.workspaceId);
  return (await query.execute()).map(toOrder);
}
