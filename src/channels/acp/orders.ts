import { createHmac } from 'node:crypto';
import { PLANS } from '../../catalog/index.ts';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/schema.ts';
import {
  followOrder,
  type Order,
  type OrderEvent,
  type OrderLinks,
  type OrderProgress,
  type OrderState,
  orderProgress,
} from '../../purchase/index.ts';
import { checkTarget, postPinned, type TargetPolicy } from '../../webhooks/index.ts';
import type { AcpOrder } from './schemas.ts';

const ORDER_STATUS: Record<OrderState, string> = {
  placed: 'confirmed',
  // The workspace is in the buyer's hands: delivered, whatever happens to it later.
  invitation_accepted: 'completed',
  term_ended: 'completed',
};

/** ACP's fulfillment event types where one fits; the vocabulary is open for the term's end. */
const EVENT_TYPES: Record<OrderEvent['type'], string> = {
  workspace_created: 'processing',
  invitation_sent: 'shipped',
  invitation_accepted: 'delivered',
  term_ended: 'term_ended',
};

const EVENT_WORDS: Record<OrderEvent['type'], string> = {
  workspace_created: 'The workspace was created on the plan bought.',
  invitation_sent: "The owner invitation was emailed to the buyer's address.",
  invitation_accepted: 'The owner invitation was accepted: the buyer has the workspace.',
  term_ended: 'The prepaid term ended; the workspace moved to the Free plan (it never renews).',
};

/** The order as ACP's `Order` has it, kept current from what happened to the purchase. */
export function toAcpOrder(
  progress: OrderProgress,
  checkoutSessionId: string,
  orderLinks: OrderLinks,
  config: Config,
): AcpOrder {
  const { order } = progress;
  const lineItemId = `li_${order.itemId}`;
  const fulfilled = progress.invitationAccepted ? 1 : 0;
  const sent = progress.events.some((event) => event.type === 'invitation_sent');
  const totals = [
    { type: 'subtotal' as const, display_text: 'Subtotal', amount: order.amount },
    { type: 'total' as const, display_text: 'Total', amount: order.amount },
  ];
  return {
    type: 'order',
    id: order.id,
    checkout_session_id: checkoutSessionId,
    permalink_url: orderLinks.url(order.id),
    status: ORDER_STATUS[progress.state],
    confirmation: { confirmation_number: order.id, confirmation_email_sent: sent },
    line_items: [
      {
        id: lineItemId,
        title: `${PLANS[order.plan].name} plan, one ${order.term}`,
        product_id: order.itemId,
        quantity: { ordered: 1, current: 1, fulfilled },
        unit_price: order.amount,
        totals,
        status: fulfilled === 1 ? 'fulfilled' : 'processing',
      },
    ],
    fulfillments: [
      {
        id: `ful_${order.id}`,
        type: 'digital',
        status: progress.invitationAccepted ? 'delivered' : sent ? 'shipped' : 'processing',
        line_items: [{ id: lineItemId, quantity: 1 }],
        digital_delivery: {
          access_url: `${config.baseUrl}/sign-in`,
          expires_at: order.termEndsAt.toISOString(),
        },
        description: 'A compliance workspace; the owner invitation emailed to the buyer opens it.',
        events: progress.events.map((event) => ({
          id: `evt_${event.type}`,
          type: EVENT_TYPES[event.type],
          occurred_at: event.at.toISOString(),
          description: EVENT_WORDS[event.type],
        })),
      },
    ],
    totals,
  };
}

async function checkoutSessionOf(db: Db, orderId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('acp_orders')
    .select('checkout_session_id')
    .where('order_id', '=', orderId)
    .executeTakeFirst();
  return row?.checkout_session_id;
}

/** With an order webhook configured, the agent is told the order's every state from now on. */
export async function followAcpOrder(
  db: Db,
  config: Config,
  sessionId: string,
  order: Order,
  now: Date,
): Promise<void> {
  if (!config.acp.orderWebhook) return;
  await db
    .insertInto('acp_orders')
    .values({ order_id: order.id, checkout_session_id: sessionId, created_at: now.getTime() })
    .onConflict((oc) => oc.column('order_id').doNothing())
    .execute();
  await followOrder(db, now, order, 'acp');
}

export interface AcpOrderNotifierDeps {
  db: Db;
  config: Config;
  orderLinks: OrderLinks;
  targets: TargetPolicy;
  timeoutMs: number;
}

/**
 * ACP's merchant-to-agent order webhook: `{type: order_create | order_update, data: Order}`, signed
 * with `Merchant-Signature: t=<unix seconds>,v1=<HMAC-SHA256 of "<t>." + body>` under the secret
 * shared at onboarding. A failed delivery throws, so the job retries it.
 */
export function acpOrderNotifier(deps: AcpOrderNotifierDeps) {
  return async (orderId: string, eventId: string): Promise<void> => {
    const webhook = deps.config.acp.orderWebhook;
    const progress = await orderProgress(deps.db, orderId);
    const sessionId = progress ? await checkoutSessionOf(deps.db, orderId) : undefined;
    if (!webhook || !progress || sessionId === undefined) return;
    const target = await checkTarget(webhook.url, deps.targets);
    if (!target.ok) throw new Error(`the ACP order webhook URL is refused: ${target.error.message}`);
    const body = JSON.stringify({
      type: progress.state === 'placed' ? 'order_create' : 'order_update',
      data: toAcpOrder(progress, sessionId, deps.orderLinks, deps.config),
    });
    const timestamp = Math.floor(Date.now() / 1000);
    const signature = createHmac('sha256', webhook.secret).update(`${timestamp}.${body}`).digest('hex');
    const result = await postPinned({
      target: target.value,
      headers: {
        'content-type': 'application/json',
        'merchant-signature': `t=${timestamp},v1=${signature}`,
        'request-id': eventId,
        timestamp: new Date(timestamp * 1000).toISOString(),
      },
      body,
      timeoutMs: deps.timeoutMs,
    });
    if (result.statusCode === null || result.statusCode < 200 || result.statusCode > 299) {
      throw new Error(`the ACP order webhook answered ${result.statusCode ?? result.error}`);
    }
  };
}
