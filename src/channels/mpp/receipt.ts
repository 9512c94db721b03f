import { PLANS } from '../../catalog/index.ts';
import type { Order, OrderLinks } from '../../purchase/index.ts';
import { PAYMENT_METHOD } from './challenge.ts';
import type { PurchaseResult } from './schemas.ts';

/**
 * The `Payment-Receipt` header: base64url of the receipt JSON. Everything in it comes from the
 * order, so repeating a paid request yields the very same receipt.
 */
export function paymentReceipt(order: Order): string {
  const receipt = {
    method: PAYMENT_METHOD,
    reference: order.paymentIntentId,
    status: 'success',
    timestamp: order.createdAt.toISOString(),
  };
  return Buffer.from(JSON.stringify(receipt), 'utf8').toString('base64url');
}

export function purchaseResult(order: Order, orderLinks: OrderLinks): PurchaseResult {
  const plan = PLANS[order.plan].name;
  return {
    status: 'completed',
    order_id: order.id,
    order_url: orderLinks.url(order.id),
    plan: order.plan,
    amount: String(order.amount),
    currency: order.currency,
    renews: false,
    message:
      `Paid. ${withArticle(plan)} workspace was created; its owner invitation is on its way to ${order.buyerEmail}. ` +
      `The prepaid term ends ${order.termEndsAt.toISOString()} and does not renew.`,
  };
}

/** "A Pro", "An Enterprise": the indefinite article a plan's name takes. */
function withArticle(name: string): string {
  return /^[AEIOU]/i.test(name) ? `An ${name}` : `A ${name}`;
}
