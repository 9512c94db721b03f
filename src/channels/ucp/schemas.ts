import { type Static, Type } from 'typebox';
import { STORABLE_TEXT, TOKEN_TEXT } from '../../shared/text.ts';
import {
  CHECKOUT_CAPABILITY,
  CREDENTIAL_TYPE,
  INSTRUMENT_TYPE,
  PAYMENT_HANDLER_ID,
  PAYMENT_HANDLER_NAME,
} from './profile.ts';

/*
 * Requests: only the fields this service reads are declared, each bounded; anything else a
 * platform sends (ids, status, totals, context, signals...) is server-owned or unused and ignored.
 * Responses: the declared fields are an allow-list, so nothing undeclared reaches the wire.
 */

const text = (maxLength: number) => Type.String({ maxLength, pattern: STORABLE_TEXT });
const nonEmpty = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: STORABLE_TEXT });

// The router caps path parameters at 200 characters; an id of any other shape is simply not found.
export const SessionParams = Type.Object({ id: Type.String() });

const LineItemInput = Type.Object({
  item: Type.Object({ id: nonEmpty(100) }),
  // One term of one plan per checkout.
  quantity: Type.Literal(1),
});

const BuyerInput = Type.Object({
  email: Type.Optional(text(254)),
  first_name: Type.Optional(text(100)),
  last_name: Type.Optional(text(100)),
  phone_number: Type.Optional(text(32)),
});

/** Create and update (a full replacement) take the same fields. */
export const CheckoutInput = Type.Object({
  line_items: Type.Array(LineItemInput, { minItems: 1, maxItems: 1 }),
  buyer: Type.Optional(BuyerInput),
});

/**
 * The checkout a token was minted for, when the platform says so: `{type, id}` since 2026-08-25
 * (`common/types/binding.json`), `{checkout_id}` in 2026-04-08 (`shopping/types/binding.json`).
 */
const BindingInput = Type.Union([
  Type.Object({ type: nonEmpty(255), id: nonEmpty(255) }),
  Type.Object({ checkout_id: nonEmpty(255) }),
]);

const InstrumentInput = Type.Object({
  id: nonEmpty(100),
  handler_id: Type.Literal(PAYMENT_HANDLER_ID),
  type: Type.Literal(INSTRUMENT_TYPE),
  selected: Type.Literal(true),
  credential: Type.Object({
    type: Type.Literal(CREDENTIAL_TYPE),
    token: Type.String({ minLength: 1, maxLength: 255, pattern: TOKEN_TEXT }),
    binding: Type.Optional(BindingInput),
  }),
});

export const CompleteInput = Type.Object({
  payment: Type.Object({
    instruments: Type.Array(InstrumentInput, { minItems: 1, maxItems: 1 }),
  }),
});

export type CheckoutInput = Static<typeof CheckoutInput>;
export type BuyerInput = Static<typeof BuyerInput>;
export type CompleteInput = Static<typeof CompleteInput>;

const Total = Type.Object({ type: Type.String(), amount: Type.Integer() });

export const ErrorMessage = Type.Object({
  type: Type.Literal('error'),
  code: Type.String(),
  path: Type.Optional(Type.String()),
  content: Type.String(),
  severity: Type.Enum(['recoverable', 'requires_buyer_input', 'requires_buyer_review', 'unrecoverable']),
});

const PaymentHandler = Type.Object({
  id: Type.String(),
  version: Type.String(),
  available_instruments: Type.Array(Type.Object({ type: Type.String() })),
  config: Type.Object({ network_profile_id: Type.String() }),
});

const CheckoutEnvelope = Type.Object({
  version: Type.String(),
  capabilities: Type.Object({ [CHECKOUT_CAPABILITY]: Type.Array(Type.Object({ version: Type.String() })) }),
  payment_handlers: Type.Object({ [PAYMENT_HANDLER_NAME]: Type.Array(PaymentHandler) }),
});

export const Checkout = Type.Object({
  ucp: CheckoutEnvelope,
  id: Type.String(),
  line_items: Type.Array(
    Type.Object({
      id: Type.String(),
      item: Type.Object({ id: Type.String(), title: Type.String(), price: Type.Integer() }),
      quantity: Type.Integer(),
      totals: Type.Array(Total),
    }),
  ),
  buyer: Type.Optional(
    Type.Object({
      email: Type.String(),
      first_name: Type.Optional(Type.String()),
      last_name: Type.Optional(Type.String()),
      phone_number: Type.Optional(Type.String()),
    }),
  ),
  status: Type.Enum(['incomplete', 'ready_for_complete', 'complete_in_progress', 'completed', 'canceled']),
  currency: Type.String(),
  totals: Type.Array(Total),
  messages: Type.Optional(Type.Array(ErrorMessage)),
  links: Type.Array(Type.Object({ type: Type.String(), url: Type.String() })),
  expires_at: Type.String(),
  order: Type.Optional(Type.Object({ id: Type.String(), permalink_url: Type.String() })),
});

/** The body when no checkout can be returned; the official schema allows nothing else at the top. */
export const ErrorResponse = Type.Object(
  {
    ucp: Type.Object({ version: Type.String(), status: Type.Literal('error') }),
    messages: Type.Array(ErrorMessage, { minItems: 1 }),
  },
  { additionalProperties: false },
);

export type UcpCheckout = Static<typeof Checkout>;
export type UcpErrorMessage = Static<typeof ErrorMessage>;
export type UcpErrorResponse = Static<typeof ErrorResponse>;

/** Response schemas by status: a checkout on success, the error envelope on every failure. */
export const CHECKOUT_RESPONSES = {
  200: Checkout,
  201: Checkout,
  '4xx': ErrorResponse,
  '5xx': ErrorResponse,
};
