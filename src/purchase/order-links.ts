import { createHmac, createSecretKey } from 'node:crypto';
import { constantTimeEqual } from '../shared/ids.ts';

/**
 * The order page's links, the ones the checkout channels publish (`/orders/{id}?key=...`). The key
 * is an HMAC of the order id under a secret held apart from the orders, so the key can be
 * published again on every read of a completed checkout while the database keeps nothing that
 * opens a page: a reader of the orders table cannot make a link.
 */
export interface OrderLinks {
  url(orderId: string): string;
  /** Whether `key` opens the page of `orderId` (compared in constant time). */
  opens(orderId: string, key: string): boolean;
}

export function createOrderLinks(baseUrl: string, secret: string): OrderLinks {
  // A key object once: given the string, every HMAC would first make one of it.
  const hmacKey = createSecretKey(Buffer.from(secret, 'utf8'));
  const keyOf = (orderId: string) =>
    createHmac('sha256', hmacKey).update(`order-page:${orderId}`).digest('base64url');
  return {
    url: (orderId) => `${baseUrl}/orders/${encodeURIComponent(orderId)}?key=${keyOf(orderId)}`,
    opens: (orderId, key) => constantTimeEqual(keyOf(orderId), key),
  };
}
