import type { CheckoutError, CheckoutSession, SessionBuyer, SessionStatus } from '../../checkout/index.ts';
import type { Config } from '../../config.ts';
import type { OrderLinks } from '../../purchase/index.ts';
import { isEmailAddress } from '../../shared/email.ts';
import { err, ok, type Result } from '../../shared/result.ts';
import { EXPIRED, errorMessage } from './errors.ts';
import { CHECKOUT_CAPABILITY, checkoutEnvelope, UCP_VERSION } from './profile.ts';
import type { BuyerInput, CheckoutInput, CompleteInput, UcpCheckout, UcpErrorMessage } from './schemas.ts';

const UCP_STATUS: Record<SessionStatus, UcpCheckout['status']> = {
  not_ready: 'incomplete',
  ready: 'ready_for_complete',
  // An update meanwhile is answered with the checkout unchanged and a message; cancel with checkout_busy.
  paying: 'complete_in_progress',
  completed: 'completed',
  canceled: 'canceled',
  // UCP has no expired state: an expired session is canceled, and a message says why.
  expired: 'canceled',
};

/** A session holds exactly one line, so its id never needs to change. */
const LINE_ITEM_ID = 'li_1';
const ITEM_PATH = '$.line_items[0].item.id';
const EMAIL_PATH = '$.buyer.email';

export interface SessionInput {
  itemId: string;
  /** Null when the request names no buyer email: an update then clears the buyer. */
  buyer: SessionBuyer | null;
}

/** The schemas admit exactly one line item and one payment instrument; anything else is a bug. */
function onlyElement<T>(list: T[]): T {
  const [first] = list;
  if (first === undefined || list.length !== 1) throw new Error(`expected one element, got ${list.length}`);
  return first;
}

/** Reads a create or update body; the schema has checked its shape already. */
export function sessionInputFrom(body: CheckoutInput): Result<SessionInput, UcpErrorMessage> {
  const buyer = buyerFrom(body.buyer);
  if (buyer && !isEmailAddress(buyer.email)) return err(requestErrorMessage({ code: 'invalid_email' }));
  return ok({ itemId: onlyElement(body.line_items).item.id, buyer });
}

const BINDING_PATH = '$.payment.instruments[0].credential.binding';

/** The payment token of a complete, refused when its binding names another checkout. */
export function paymentTokenFrom(body: CompleteInput, checkoutId: string): Result<string, UcpErrorMessage> {
  const { token, binding } = onlyElement(body.payment.instruments).credential;
  if (binding === undefined) return ok(token);
  const bound =
    'checkout_id' in binding
      ? binding.checkout_id === checkoutId
      : binding.type === CHECKOUT_CAPABILITY && binding.id === checkoutId;
  if (bound) return ok(token);
  return err(
    errorMessage('invalid', `${BINDING_PATH} binds the payment token to another checkout.`, {
      path: BINDING_PATH,
      severity: 'unrecoverable',
    }),
  );
}

/** The core keeps a buyer only together with an email; without one the checkout is incomplete. */
function buyerFrom(input: BuyerInput | undefined): SessionBuyer | null {
  if (input?.email === undefined) return null;
  return {
    email: input.email,
    ...(input.first_name ? { firstName: input.first_name } : {}),
    ...(input.last_name ? { lastName: input.last_name } : {}),
    ...(input.phone_number ? { phoneNumber: input.phone_number } : {}),
  };
}

type RequestError = Extract<
  CheckoutError,
  { code: 'unknown_item' | 'not_sellable' | 'invalid_email' | 'payment_failed' }
>;

/** Why the core could not do what the request asked, as a message on the field concerned. */
export function requestErrorMessage(error: RequestError): UcpErrorMessage {
  switch (error.code) {
    case 'unknown_item':
      return errorMessage('not_found', error.message, { path: ITEM_PATH });
    case 'not_sellable':
      return errorMessage('item_unavailable', error.message, { path: ITEM_PATH });
    case 'invalid_email':
      return errorMessage('invalid', `${EMAIL_PATH} is not an email address.`, { path: EMAIL_PATH });
    case 'payment_failed':
      return errorMessage('payment_failed', `The payment could not be made: ${error.message}`);
  }
}

function paymentMessage(error: { code: string; message: string }): UcpErrorMessage {
  if (error.code === 'payment_failed') {
    return errorMessage(
      'payment_failed',
      `The payment could not be made: ${error.message} Complete again, with another payment token if need be.`,
    );
  }
  if (error.code === 'requires_3ds') {
    return errorMessage(
      'requires_3ds',
      'The card requires 3-D Secure authentication, which this checkout cannot run; complete again with another payment token.',
    );
  }
  return errorMessage(
    'payment_failed',
    `The payment was declined (${error.code}): ${error.message} Complete again with another payment token.`,
  );
}

function sessionMessages(session: CheckoutSession): UcpErrorMessage[] {
  switch (session.status) {
    case 'not_ready':
      return [
        errorMessage('missing', 'A buyer email is required; the workspace owner invitation is sent to it.', {
          path: EMAIL_PATH,
        }),
      ];
    case 'ready':
      return session.paymentError ? [paymentMessage(session.paymentError)] : [];
    case 'paying':
      // Only a payment set aside for review: the platform cannot act on it, a person will.
      return session.paymentError
        ? [
            errorMessage(session.paymentError.code, session.paymentError.message, {
              severity: 'unrecoverable',
            }),
          ]
        : [];
    case 'expired':
      return [errorMessage('expired', EXPIRED, { severity: 'unrecoverable' })];
    default:
      return [];
  }
}

function buyerOf(buyer: SessionBuyer): NonNullable<UcpCheckout['buyer']> {
  return {
    email: buyer.email,
    ...(buyer.firstName ? { first_name: buyer.firstName } : {}),
    ...(buyer.lastName ? { last_name: buyer.lastName } : {}),
    ...(buyer.phoneNumber ? { phone_number: buyer.phoneNumber } : {}),
  };
}

/** An update while the payment is under way leaves the checkout unchanged; UCP says so in a message. */
export function paymentUnderWayMessage(retryAfterSeconds: number): UcpErrorMessage {
  return errorMessage(
    'complete_in_progress',
    `The checkout cannot be changed while its payment is under way; read it again in ${retryAfterSeconds} s for the outcome.`,
  );
}

/** The session as a UCP checkout; `extra` carries messages about the request just answered. */
export function toCheckout(
  session: CheckoutSession,
  config: Config,
  orderLinks: OrderLinks,
  extra: UcpErrorMessage[] = [],
): UcpCheckout {
  const { item } = session;
  const totals = [
    { type: 'subtotal', amount: item.price.amount },
    { type: 'total', amount: item.price.amount },
  ];
  const messages = [...sessionMessages(session), ...extra];
  return {
    ucp: checkoutEnvelope(config, UCP_VERSION),
    id: session.id,
    line_items: [
      {
        id: LINE_ITEM_ID,
        item: { id: item.id, title: item.description, price: item.price.amount },
        quantity: 1,
        totals,
      },
    ],
    ...(session.buyer ? { buyer: buyerOf(session.buyer) } : {}),
    status: UCP_STATUS[session.status],
    currency: item.price.currency,
    totals,
    ...(messages.length > 0 ? { messages } : {}),
    links: [
      { type: 'terms_of_service', url: `${config.siteUrl}/legal/terms` },
      { type: 'privacy_policy', url: `${config.siteUrl}/legal/privacy` },
    ],
    expires_at: session.expiresAt.toISOString(),
    ...(session.order
      ? { order: { id: session.order.id, permalink_url: orderLinks.url(session.order.id) } }
      : {}),
  };
}
