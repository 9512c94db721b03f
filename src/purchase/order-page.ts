import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../db/schema.ts';
import { constantTimeEqual } from '../shared/ids.ts';
import { findOrder } from './attempts.ts';
import type { OrderLinks } from './order-links.ts';
import { type Order, toOrder } from './pipeline.ts';

/** 32 bytes in base64url: the shape of every order page key. */
const PAGE_KEY_PATTERN = /^[A-Za-z0-9_-]{43}$/;
const LINK_SECRET_NAME = 'order_page_links';

/**
 * The secret of the order links: ORDER_LINK_SECRET when the operator sets it (kept out of the
 * database), otherwise one generated once into the database so that every instance agrees.
 */
export async function loadOrderLinkSecret(
  db: Db,
  configured: string | undefined,
  now: number,
): Promise<string> {
  if (configured !== undefined) return configured;
  await db
    .insertInto('purchase_secrets')
    .values({ name: LINK_SECRET_NAME, secret: randomBytes(32).toString('base64url'), created_at: now })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const row = await db
    .selectFrom('purchase_secrets')
    .select('secret')
    .where('name', '=', LINK_SECRET_NAME)
    .executeTakeFirstOrThrow();
  return row.secret;
}

/** SHA-256 of a page key, as kept for the links published before keys were derived. */
function pageKeyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/**
 * The order the link names, or undefined for an unknown order or a wrong key: the derived key, or
 * for an order from before keys were derived, the key whose hash it keeps.
 */
export async function findOrderByPageLink(
  db: Db,
  links: OrderLinks,
  orderId: string,
  key: string,
): Promise<Order | undefined> {
  if (!PAGE_KEY_PATTERN.test(key) || orderId.length > 100) return undefined;
  const row = await findOrder(db, orderId);
  if (!row) return undefined;
  const legacy = row.page_key_hash !== null && constantTimeEqual(row.page_key_hash, pageKeyHash(key));
  return links.opens(row.id, key) || legacy ? toOrder(row) : undefined;
}
