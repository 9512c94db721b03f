import type { FastifyInstance } from 'fastify';
import { findSellableItem } from '../../catalog/index.ts';
import type { Config } from '../../config.ts';
import type { Db } from '../../db/schema.ts';
import { sendWire } from '../../http/errors.ts';
import {
  followOrder,
  getOrder,
  type OrderEvent,
  type OrderLinks,
  type OrderProgress,
  orderProgress,
} from '../../purchase/index.ts';
import { contentDigest, type KeyStore, signRequest } from '../../signing/index.ts';
import { checkTarget, postPinned, type TargetPolicy } from '../../webhooks/index.ts';
import { errorMessage, errorReply } from './errors.ts';
import { findPlatform } from './platforms.ts';
import { UCP_VERSION } from './profile.ts';
import { verifiedPlatformOf } from './signatures.ts';

export const ORDER_CAPABILITY = 'dev.ucp.shopping.order';
const LINE_ITEM_ID = 'li_1';

const EVENT_WORDS: Record<OrderEvent['type'], string> = {
  workspace_created: 'The workspace was created on the plan bought.',
  invitation_sent: "The owner invitation was emailed to the buyer's address.",
  invitation_accepted: 'The owner invitation was accepted: the buyer has the workspace.',
  term_ended: 'The prepaid term ended; the workspace moved to the Free plan (it never renews).',
};

/**
 * The order as UCP's `shopping/order.json` has it: the one line (fulfilled once the owner
 * invitation is accepted) and an append-only event log of what happened. Nothing ships, so there
 * are no expectations (they need a destination).
 */
export function toUcpOrder(progress: OrderProgress, checkoutId: string, orderLinks: OrderLinks) {
  const { order } = progress;
  const found = findSellableItem(order.itemId);
  const title = found.ok ? found.value.description : order.itemId;
  const totals = [
    { type: 'subtotal', amount: order.amount },
    { type: 'total', amount: order.amount },
  ];
  const fulfilled = progress.invitationAccepted ? 1 : 0;
  return {
    ucp: { version: UCP_VERSION, capabilities: { [ORDER_CAPABILITY]: [{ version: UCP_VERSION }] } },
    id: order.id,
    checkout_id: checkoutId,
    permalink_url: orderLinks.url(order.id),
    line_items: [
      {
        id: LINE_ITEM_ID,
        item: { id: order.itemId, title, price: order.amount },
        quantity: { original: 1, total: 1, fulfilled },
        totals,
        status: fulfilled === 1 ? 'fulfilled' : 'processing',
      },
    ],
    fulfillment: {
      events: progress.events.map((event) => ({
        id: `evt_${event.type}`,
        occurred_at: event.at.toISOString(),
        type: event.type,
        line_items: [{ id: LINE_ITEM_ID, quantity: 1 }],
        description: EVENT_WORDS[event.type],
      })),
    },
    currency: order.currency,
    totals,
  };
}

/**
 * Ties a completed UCP checkout to its order; when the paying request was signed by a registered
 * platform that gave an order webhook URL, that platform is told the order's every state.
 */
export async function recordUcpOrder(
  db: Db,
  input: { orderId: string; checkoutId: string; platformProfileUrl: string | undefined },
  now: Date,
): Promise<void> {
  await db
    .insertInto('ucp_orders')
    .values({
      order_id: input.orderId,
      checkout_id: input.checkoutId,
      platform_profile_url: input.platformProfileUrl ?? null,
      created_at: now.getTime(),
    })
    .onConflict((oc) => oc.column('order_id').doNothing())
    .execute();
  if (input.platformProfileUrl === undefined) return;
  // Read first without a signature (the session id is the agent's handle), then signed.
  await db
    .updateTable('ucp_orders')
    .set({ platform_profile_url: input.platformProfileUrl })
    .where('order_id', '=', input.orderId)
    .where('platform_profile_url', 'is', null)
    .execute();
  const platform = await findPlatform(db, input.platformProfileUrl);
  const order = await getOrder(db, input.orderId);
  if (platform?.orderWebhookUrl && order) await followOrder(db, now, order, 'ucp');
}

function findUcpOrder(db: Db, orderId: string) {
  return db.selectFrom('ucp_orders').selectAll().where('order_id', '=', orderId).executeTakeFirst();
}

const notFound = () =>
  errorReply(404, [
    errorMessage('not_found', 'There is no order with this id.', { severity: 'unrecoverable' }),
  ]);

/**
 * `GET /orders/{id}`: the order, to the platform that paid for it only. The request must be signed
 * (platform credentials are what UCP allows here); an order of another platform, or none, is 404.
 */
export function registerOrderRoute(app: FastifyInstance, deps: { db: Db; orderLinks: OrderLinks }): void {
  app.get<{ Params: { id: string } }>('/orders/:id', async (request, reply) => {
    const platform = verifiedPlatformOf(request);
    if (platform === undefined) {
      return sendWire(
        reply,
        errorReply(401, [
          errorMessage(
            'unauthorized',
            'Sign the request (RFC 9421) with a key of the registered platform that paid for the order.',
            { severity: 'unrecoverable' },
          ),
        ]),
      );
    }
    const record = await findUcpOrder(deps.db, request.params.id);
    const progress =
      record?.platform_profile_url === platform ? await orderProgress(deps.db, request.params.id) : undefined;
    if (!record || !progress) return sendWire(reply, notFound());
    return sendWire(reply, { status: 200, body: toUcpOrder(progress, record.checkout_id, deps.orderLinks) });
  });
}

export interface UcpOrderNotifierDeps {
  db: Db;
  config: Config;
  orderLinks: OrderLinks;
  signingKeys: KeyStore;
  targets: TargetPolicy;
  timeoutMs: number;
}

/**
 * Sends the order's current state to its platform's webhook URL: Standard Webhooks ids and
 * timestamps, signed per RFC 9421 with the business's key (UCP-Agent names the business profile).
 * A failed delivery throws, so the job retries it.
 */
export function ucpOrderNotifier(deps: UcpOrderNotifierDeps) {
  return async (orderId: string, eventId: string): Promise<void> => {
    const record = await findUcpOrder(deps.db, orderId);
    const platform = record?.platform_profile_url
      ? await findPlatform(deps.db, record.platform_profile_url)
      : undefined;
    const progress = await orderProgress(deps.db, orderId);
    if (!record || !platform?.orderWebhookUrl || !progress) return;
    const target = await checkTarget(platform.orderWebhookUrl, deps.targets);
    if (!target.ok) throw new Error(`the order webhook URL is refused: ${target.error.message}`);
    const body = JSON.stringify(toUcpOrder(progress, record.checkout_id, deps.orderLinks));
    const now = new Date();
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      // Where the site publishes the business profile whose keys verify this signature.
      'ucp-agent': `profile="${deps.config.siteUrl}/.well-known/ucp"`,
      'webhook-id': eventId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'content-digest': contentDigest(body),
    };
    const url = target.value.url;
    const signed = signRequest(
      await deps.signingKeys.signingKey(),
      {
        method: 'POST',
        authority: url.host,
        path: url.pathname,
        query: url.search.slice(1),
        header: (name) => headers[name],
      },
      [
        '@method',
        '@authority',
        '@path',
        ...(url.search ? ['@query'] : []),
        'ucp-agent',
        'webhook-id',
        'webhook-timestamp',
        'content-digest',
        'content-type',
      ],
      now,
    );
    const result = await postPinned({
      target: target.value,
      headers: { ...headers, ...signed },
      body,
      timeoutMs: deps.timeoutMs,
    });
    if (result.statusCode === null || result.statusCode < 200 || result.statusCode > 299) {
      throw new Error(`the order webhook answered ${result.statusCode ?? result.error}`);
    }
  };
}
