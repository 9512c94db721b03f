import { type Static, Type } from 'typebox';
import { EmailAddress } from '../../shared/email.ts';
import { STORABLE_TEXT, TOKEN_TEXT } from '../../shared/text.ts';

/**
 * Wire shapes of ACP 2026-04-17. Requests are lenient where agents differ (acp.md §8: `quantity` on
 * line items, unknown fields ignored) and strict where money is concerned; every string is bounded.
 * Undeclared, hence ignored whatever their shape: the unreleased spec's `suggested_price` on items
 * and `fulfillment_details` on complete (the catalog price is charged; nothing is shipped), and
 * enums this service does not act on (capabilities, intent_trace.reason_code, risk signals,
 * marketing consents), so a value added by a later release is tolerated. Handler, instrument and
 * credential types and the currency stay closed: they decide what is charged.
 * Responses are allow-lists: Fastify serializes exactly these fields.
 */

export const PAYMENT_HANDLER_ID = 'psp_spt';

const Text = (maxLength: number) => Type.String({ maxLength, pattern: STORABLE_TEXT });
const Id = Type.String({ minLength: 1, maxLength: 200, pattern: STORABLE_TEXT });

// ---- requests ----

const RequestItem = Type.Object({
  id: Id,
  // Not in the 2026-04-17 Item (issue #264), but agents send it; a checkout is one plan for one term.
  quantity: Type.Optional(Type.Integer({ minimum: 1, maximum: 1 })),
  name: Type.Optional(Text(500)),
  unit_amount: Type.Optional(Type.Integer()),
});

/** Exactly one item per session. */
const RequestLineItems = Type.Tuple([RequestItem]);

const BuyerInput = Type.Object({
  email: EmailAddress(),
  first_name: Type.Optional(Text(200)),
  last_name: Type.Optional(Text(200)),
  full_name: Type.Optional(Text(200)),
  phone_number: Type.Optional(Text(40)),
  company: Type.Optional(Type.Object({ name: Text(200) })),
});
export type BuyerInput = Static<typeof BuyerInput>;

export const CreateSessionBody = Type.Object({
  line_items: RequestLineItems,
  currency: Type.Literal('usd'),
  capabilities: Type.Optional(Type.Object({})),
  buyer: Type.Optional(BuyerInput),
});

export const UpdateSessionBody = Type.Object({
  line_items: Type.Optional(RequestLineItems),
  /** Null removes the buyer (ACP: null clears a field, absent leaves it). */
  buyer: Type.Optional(Type.Union([BuyerInput, Type.Null()])),
});

export const CompleteSessionBody = Type.Object({
  payment_data: Type.Object({
    handler_id: Type.Literal(PAYMENT_HANDLER_ID),
    instrument: Type.Object({
      type: Type.Literal('card'),
      credential: Type.Object({
        type: Type.Literal('spt'),
        token: Type.String({ minLength: 1, maxLength: 500, pattern: TOKEN_TEXT }),
      }),
    }),
  }),
  buyer: Type.Optional(BuyerInput),
});

/** The body is optional; an intent trace is accepted and not kept. */
export const CancelSessionBody = Type.Union([
  Type.Object({
    intent_trace: Type.Optional(
      Type.Object({
        reason_code: Text(100),
        trace_summary: Type.Optional(Text(500)),
        metadata: Type.Optional(Type.Object({})),
      }),
    ),
  }),
  Type.Null(),
]);

export const SessionParams = Type.Object({ id: Id });

// ---- responses ----

const AcpStatus = Type.Union([
  Type.Literal('not_ready_for_payment'),
  Type.Literal('ready_for_payment'),
  Type.Literal('complete_in_progress'),
  Type.Literal('completed'),
  Type.Literal('canceled'),
  Type.Literal('expired'),
]);
export type AcpStatus = Static<typeof AcpStatus>;

const PaymentHandler = Type.Object({
  id: Type.Literal(PAYMENT_HANDLER_ID),
  name: Type.String(),
  display_name: Type.String(),
  version: Type.String(),
  spec: Type.String(),
  requires_delegate_payment: Type.Boolean(),
  requires_pci_compliance: Type.Boolean(),
  psp: Type.String(),
  config_schema: Type.String(),
  instrument_schemas: Type.Array(Type.String()),
  config: Type.Object({
    merchant_id: Type.String(),
    psp: Type.String(),
    accepted_brands: Type.Array(Type.String()),
    supports_3ds: Type.Boolean(),
    environment: Type.Union([Type.Literal('sandbox'), Type.Literal('production')]),
  }),
});
export type PaymentHandler = Static<typeof PaymentHandler>;

const Total = Type.Object({
  type: Type.Union([Type.Literal('items_base_amount'), Type.Literal('subtotal'), Type.Literal('total')]),
  display_text: Type.String(),
  amount: Type.Integer(),
});
export type Total = Static<typeof Total>;

const LineItem = Type.Object({
  id: Type.String(),
  item: Type.Object({ id: Type.String(), name: Type.String(), unit_amount: Type.Integer() }),
  quantity: Type.Literal(1),
  name: Type.String(),
  description: Type.String(),
  unit_amount: Type.Integer(),
  disclosures: Type.Array(
    Type.Object({
      type: Type.Literal('disclaimer'),
      content_type: Type.Literal('plain'),
      content: Type.String(),
    }),
  ),
  totals: Type.Array(Total),
});

const MessageError = Type.Object({
  type: Type.Literal('error'),
  code: Type.Union([
    Type.Literal('missing'),
    Type.Literal('payment_declined'),
    Type.Literal('requires_3ds'),
    Type.Literal('expired'),
  ]),
  content_type: Type.Literal('plain'),
  content: Type.String(),
  param: Type.Optional(Type.String()),
  resolution: Type.Union([Type.Literal('recoverable'), Type.Literal('requires_buyer_input')]),
});

const MessageInfo = Type.Object({
  type: Type.Literal('info'),
  content_type: Type.Literal('plain'),
  content: Type.String(),
});
export type Message = Static<typeof MessageError> | Static<typeof MessageInfo>;

const BuyerOutput = Type.Object({
  email: Type.String(),
  first_name: Type.Optional(Type.String()),
  last_name: Type.Optional(Type.String()),
  full_name: Type.Optional(Type.String()),
  phone_number: Type.Optional(Type.String()),
  company: Type.Optional(Type.Object({ name: Type.String() })),
});

const Link = Type.Object({
  type: Type.Union([Type.Literal('terms_of_use'), Type.Literal('privacy_policy')]),
  url: Type.String(),
});
export type Link = Static<typeof Link>;

const OrderTotal = Type.Object({
  type: Type.Union([Type.Literal('subtotal'), Type.Literal('total')]),
  display_text: Type.String(),
  amount: Type.Integer(),
});

/** ACP's Order: the three required members on every completed session, the rest once it is read. */
const Order = Type.Object({
  type: Type.Optional(Type.Literal('order')),
  id: Type.String(),
  checkout_session_id: Type.String(),
  permalink_url: Type.String(),
  status: Type.Optional(Type.String()),
  confirmation: Type.Optional(
    Type.Object({ confirmation_number: Type.String(), confirmation_email_sent: Type.Boolean() }),
  ),
  line_items: Type.Optional(
    Type.Array(
      Type.Object({
        id: Type.String(),
        title: Type.String(),
        product_id: Type.String(),
        quantity: Type.Object({
          ordered: Type.Integer(),
          current: Type.Integer(),
          fulfilled: Type.Integer(),
        }),
        unit_price: Type.Integer(),
        totals: Type.Array(OrderTotal),
        status: Type.String(),
      }),
    ),
  ),
  fulfillments: Type.Optional(
    Type.Array(
      Type.Object({
        id: Type.String(),
        type: Type.Literal('digital'),
        status: Type.String(),
        line_items: Type.Array(Type.Object({ id: Type.String(), quantity: Type.Integer() })),
        digital_delivery: Type.Object({ access_url: Type.String(), expires_at: Type.String() }),
        description: Type.String(),
        events: Type.Array(
          Type.Object({
            id: Type.String(),
            type: Type.String(),
            occurred_at: Type.String(),
            description: Type.String(),
          }),
        ),
      }),
    ),
  ),
  totals: Type.Optional(Type.Array(OrderTotal)),
});
export type AcpOrder = Static<typeof Order>;

export const AcpCheckoutSession = Type.Object({
  id: Type.String(),
  protocol: Type.Object({ version: Type.String() }),
  status: AcpStatus,
  currency: Type.Literal('usd'),
  capabilities: Type.Object({ payment: Type.Object({ handlers: Type.Array(PaymentHandler) }) }),
  buyer: Type.Optional(BuyerOutput),
  line_items: Type.Array(LineItem),
  // Nothing ships: the workspace exists the moment the payment succeeds.
  fulfillment_options: Type.Array(Type.Never()),
  totals: Type.Array(Total),
  messages: Type.Array(Type.Union([MessageError, MessageInfo])),
  links: Type.Array(Link),
  created_at: Type.String(),
  updated_at: Type.String(),
  expires_at: Type.String(),
  order: Type.Optional(Order),
});
export type AcpCheckoutSession = Static<typeof AcpCheckoutSession>;

export const AcpError = Type.Object({
  type: Type.Union([
    Type.Literal('invalid_request'),
    Type.Literal('processing_error'),
    Type.Literal('service_unavailable'),
  ]),
  code: Type.String(),
  message: Type.String(),
  param: Type.Optional(Type.String()),
  supported_versions: Type.Optional(Type.Array(Type.String())),
});
export type AcpError = Static<typeof AcpError>;

const errorResponses = { '4xx': AcpError, '5xx': AcpError };
/** A session operation answers with the session, or with ACP's flat Error. */
export const sessionResponses = { 200: AcpCheckoutSession, ...errorResponses };
export const createdSessionResponses = { 201: AcpCheckoutSession, ...errorResponses };
