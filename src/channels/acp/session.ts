import { describeEntitlements, PLANS } from '../../catalog/index.ts';
import type { CheckoutSession, SessionBuyer, SessionStatus } from '../../checkout/index.ts';
import type { Config } from '../../config.ts';
import type { OrderLinks } from '../../purchase/index.ts';
import {
  type AcpCheckoutSession,
  type AcpStatus,
  type Link,
  type Message,
  PAYMENT_HANDLER_ID,
  type PaymentHandler,
  type Total,
} from './schemas.ts';
import { ACP_VERSION } from './version.ts';

export const ACP_STATUS: Readonly<Record<SessionStatus, AcpStatus>> = {
  not_ready: 'not_ready_for_payment',
  ready: 'ready_for_payment',
  // Update and cancel answer payment_in_progress meanwhile.
  paying: 'complete_in_progress',
  completed: 'completed',
  canceled: 'canceled',
  expired: 'expired',
};

/** Builds the wire session from the core's; the parts that only depend on configuration are built once. */
export function createSessionPresenter(
  config: Config,
  orderLinks: OrderLinks,
): (session: CheckoutSession) => AcpCheckoutSession {
  const handler = paymentHandler(config);
  const links: Link[] = [
    { type: 'terms_of_use', url: `${config.siteUrl}/legal/terms` },
    { type: 'privacy_policy', url: `${config.siteUrl}/legal/privacy` },
  ];
  return (session) => ({
    id: session.id,
    protocol: { version: ACP_VERSION },
    status: ACP_STATUS[session.status],
    currency: 'usd',
    capabilities: { payment: { handlers: [handler] } },
    ...(session.buyer && session.status !== 'completed' ? { buyer: buyerOf(session.buyer) } : {}),
    line_items: [lineItemOf(session)],
    fulfillment_options: [],
    totals: totalsOf(session.item.price.amount),
    messages: messagesOf(session),
    links,
    created_at: session.createdAt.toISOString(),
    updated_at: session.updatedAt.toISOString(),
    expires_at: session.expiresAt.toISOString(),
    ...(session.order
      ? {
          order: {
            id: session.order.id,
            checkout_session_id: session.id,
            permalink_url: orderLinks.url(session.order.id),
          },
        }
      : {}),
  });
}

/** The one way to pay: a card shared payment token, charged through our PSP account. */
function paymentHandler(config: Config): PaymentHandler {
  const live = config.psp.kind === 'remote' && /^(sk|rk)_live_/.test(config.psp.secretKey);
  return {
    id: PAYMENT_HANDLER_ID,
    name: 'dev.acp.tokenized.card',
    display_name: 'Card',
    version: ACP_VERSION,
    spec: 'https://acp.dev/handlers/tokenized.card',
    requires_delegate_payment: true,
    requires_pci_compliance: false,
    psp: 'psp',
    config_schema: 'https://acp.dev/schemas/handlers/tokenized.card/config.json',
    instrument_schemas: ['https://acp.dev/schemas/handlers/tokenized.card/instrument.json'],
    config: {
      merchant_id: config.psp.networkProfileId,
      psp: 'psp',
      accepted_brands: ['visa', 'mastercard', 'amex', 'discover'],
      // A 3-D Secure challenge cannot be run in this checkout; such cards are declined.
      supports_3ds: false,
      environment: live ? 'production' : 'sandbox',
    },
  };
}

function lineItemOf(session: CheckoutSession): AcpCheckoutSession['line_items'][number] {
  const { item } = session;
  const name = `${PLANS[item.price.plan].name} plan, one ${item.price.term}`;
  return {
    id: `li_${item.id}`,
    item: { id: item.id, name, unit_amount: item.price.amount },
    quantity: 1,
    name,
    description: `${item.description}; includes ${describeEntitlements(item.price.plan)}`,
    unit_amount: item.price.amount,
    disclosures: [
      {
        type: 'disclaimer',
        content_type: 'plain',
        content: `Prepaid for one ${item.price.term}; it does not renew. The workspace then moves to the Free plan.`,
      },
    ],
    totals: totalsOf(item.price.amount),
  };
}

function totalsOf(amount: number): Total[] {
  return [
    { type: 'items_base_amount', display_text: 'Item(s) total', amount },
    { type: 'subtotal', display_text: 'Subtotal', amount },
    { type: 'total', display_text: 'Total', amount },
  ];
}

function messagesOf(session: CheckoutSession): Message[] {
  const messages: Message[] = [];
  if (session.status === 'not_ready') {
    messages.push({
      type: 'error',
      code: 'missing',
      content_type: 'plain',
      content: "Add the buyer's email address; the invitation to the new workspace is sent there.",
      param: '$.buyer.email',
      resolution: 'requires_buyer_input',
    });
  }
  if (session.paymentError) messages.push(paymentMessage(session.status, session.paymentError));
  const closing = CLOSING_MESSAGES[session.status];
  if (closing) messages.push(closing);
  return messages;
}

/** Why the last payment did not go through, or, while paying, that a person is reviewing it. */
function paymentMessage(status: SessionStatus, error: { code: string; message: string }): Message {
  if (status === 'paying') return { type: 'info', content_type: 'plain', content: error.message };
  return {
    type: 'error',
    code: error.code === 'requires_3ds' ? 'requires_3ds' : 'payment_declined',
    content_type: 'plain',
    content: error.message,
    resolution: 'requires_buyer_input',
  };
}

const CLOSING_MESSAGES: Partial<Record<SessionStatus, Message>> = {
  completed: {
    type: 'info',
    content_type: 'plain',
    content: "Paid. The invitation to the new workspace is on its way to the buyer's email address.",
  },
  canceled: { type: 'info', content_type: 'plain', content: 'Checkout session has been canceled.' },
  expired: {
    type: 'error',
    code: 'expired',
    content_type: 'plain',
    content: 'This checkout session expired one hour after it was created; start a new one.',
    resolution: 'recoverable',
  },
};

function buyerOf(buyer: SessionBuyer): NonNullable<AcpCheckoutSession['buyer']> {
  return {
    email: buyer.email,
    ...(buyer.firstName ? { first_name: buyer.firstName } : {}),
    ...(buyer.lastName ? { last_name: buyer.lastName } : {}),
    ...(buyer.fullName ? { full_name: buyer.fullName } : {}),
    ...(buyer.phoneNumber ? { phone_number: buyer.phoneNumber } : {}),
    ...(buyer.companyName ? { company: { name: buyer.companyName } } : {}),
  };
}
