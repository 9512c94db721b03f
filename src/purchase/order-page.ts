import type { Db } from '../db/schema.ts';
import { constantTimeEqual } from '../shared/ids.ts';
import { findOrder } from './attempts.ts';
import { type Order, toOrder } from './pipeline.ts';

/** 32 random bytes in base64url. */
const PAGE_KEY_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * The order page's link, the one the checkout channels publish: the order id names the order,
 * the 256-bit key is what lets its holder see it. The key is republished on every read of a
 * completed checkout, so it is kept (not only its hash) next to the order it protects.
 */
export function orderPageUrl(baseUrl: string, order: Pick<Order, 'id' | 'pageKey'>): string {
  return `${baseUrl}/orders/${encodeURIComponent(order.id)}?key=${order.pageKey}`;
}

/** The order the link names, or undefined for an unknown order or a wrong key (compared in constant time). */
export async function findOrderByPageLink(db: Db, orderId: string, key: string): Promise<Order | undefined> {
  if (!PAGE_KEY_PATTERN.test(key) || orderId.length > 100) return undefined;
  const row = await findOrder(db, orderId);
  if (!row || !constantTimeEqual(row.page_key, key)) return undefined;
  return toOrder(row);
}
