import type { Tx } from '../db/schema.ts';
import { newId, sha256Hex } from '../shared/ids.ts';
import { insertOrder } from './attempts.ts';
import { type Order, toOrder } from './pipeline.ts';

/** A payment the provider's hosted checkout already took, for a term of an existing workspace. */
export type PaidAppOrder = Omit<Order, 'id' | 'channel' | 'createdAt'> & {
  orderId: string;
  /** The provider's checkout id: one order per checkout (the attempt's key). */
  checkoutId: string;
  at: Date;
};

/**
 * Records an order of the app's Billing page (channel `app`) in the caller's transaction. Every
 * order has its payment attempt; this one is written completed, with no token (the person paid
 * on the provider's page), its key derived from the checkout id so a second call for the same
 * checkout fails on the unique key instead of writing a second order.
 */
export async function recordPaidAppOrder(trx: Tx, input: PaidAppOrder): Promise<Order> {
  const attemptId = newId('pa', input.at);
  const at = input.at.getTime();
  await trx
    .insertInto('payment_attempts')
    .values({
      id: attemptId,
      attempt_key: `app:${input.checkoutId}`,
      channel: 'app',
      item_id: input.itemId,
      plan: input.plan,
      term: input.term,
      amount: input.amount,
      currency: input.currency,
      buyer_email: input.buyerEmail,
      buyer_name: null,
      company_name: null,
      // No shared payment token exists: the hash names what paid, the provider's checkout.
      token_hash: sha256Hex(input.checkoutId),
      token: null,
      order_id: input.orderId,
      psp_idempotency_key: `svc_${attemptId}`,
      status: 'completed',
      locked_until: null,
      locked_by: null,
      payment_intent_id: input.paymentIntentId,
      charged_at: at,
      decline_code: null,
      decline_message: null,
      last_error: null,
      created_at: at,
      updated_at: at,
    })
    .execute();
  const row = {
    id: input.orderId,
    attempt_id: attemptId,
    channel: 'app',
    item_id: input.itemId,
    plan: input.plan,
    term: input.term,
    amount: input.amount,
    currency: input.currency,
    buyer_email: input.buyerEmail,
    payment_intent_id: input.paymentIntentId,
    workspace_id: input.workspaceId,
    term_starts_at: input.termStartsAt.getTime(),
    term_ends_at: input.termEndsAt.getTime(),
    page_key_hash: null,
    created_at: at,
  };
  await insertOrder(trx, row);
  return toOrder(row);
}
