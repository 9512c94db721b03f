import { type Static, Type } from 'typebox';
import { type Problem, ProblemSchema } from '../../http/problem.ts';
import { EmailAddress } from '../../shared/email.ts';
import { STORABLE_TEXT, TOKEN_TEXT } from '../../shared/text.ts';

/**
 * Wire shapes of the MPP channel. The routes validate and serialize with these, and the OpenAPI
 * document at /openapi.json is generated from the same objects, so the two cannot drift apart.
 */

const Text = (maxLength: number) => Type.String({ maxLength, pattern: STORABLE_TEXT });

// ---- requests ----

export const PurchaseRequestBody = Type.Object({
  buyer: Type.Object(
    {
      email: EmailAddress({ description: 'Receives the owner invitation of the new workspace.' }),
      first_name: Type.Optional(Text(200)),
      last_name: Type.Optional(Text(200)),
      full_name: Type.Optional(Text(200)),
      company: Type.Optional(
        Type.Object({
          name: Type.Optional(
            Type.String({ maxLength: 200, pattern: STORABLE_TEXT, description: 'Names the new workspace.' }),
          ),
        }),
      ),
    },
    { description: 'The person the workspace is for.' },
  ),
});
export type PurchaseRequestBody = Static<typeof PurchaseRequestBody>;

/** The decoded `Authorization: Payment` credential (draft-httpauth-payment §Credentials). */
export const PaymentCredential = Type.Object({
  challenge: Type.Object({
    id: Type.String({ minLength: 1 }),
    realm: Type.String(),
    method: Type.String(),
    intent: Type.String(),
    request: Type.String(),
    description: Type.Optional(Type.String()),
    expires: Type.Optional(Type.String()),
    digest: Type.Optional(Type.String()),
    opaque: Type.Optional(Type.String()),
    header: Type.Optional(Type.String()),
  }),
  source: Type.Optional(Type.String()),
  /** Required; whether it fits the method's schema is a question of its own (`invalid-payload`). */
  payload: Type.Unknown(),
});
export type PaymentCredential = Static<typeof PaymentCredential>;

/** The `psp` method's proof of payment: a shared payment token minted for the challenge. */
export const PspPayload = Type.Object({
  spt: Type.String({ minLength: 1, maxLength: 500, pattern: TOKEN_TEXT }),
  externalId: Type.Optional(Type.String({ maxLength: 200 })),
});

// ---- responses ----

export const PurchaseResult = Type.Object({
  status: Type.Literal('completed'),
  order_id: Type.String(),
  order_url: Type.String({
    format: 'uri',
    description:
      'The order page: what was bought, the payment reference, the owner invitation and a button to send it again. The link is the only key to it; keep it private.',
  }),
  plan: Type.String({ description: 'The plan of the new workspace: starter, pro or enterprise.' }),
  amount: Type.String({ pattern: '^(0|[1-9][0-9]*)$', description: 'Amount charged, in cents.' }),
  currency: Type.Literal('usd'),
  renews: Type.Literal(false),
  message: Type.String(),
});
export type PurchaseResult = Static<typeof PurchaseResult>;

/** RFC 9457 problem of the Payment scheme; every one comes with a fresh challenge. */
export const PaymentProblem = Type.Object({
  type: Type.String({ description: 'https://paymentauth.org/problems/<code>' }),
  title: Type.String(),
  status: Type.Literal(402),
  detail: Type.String(),
  challengeId: Type.String({ description: 'Id of the fresh challenge in WWW-Authenticate.' }),
  decline_code: Type.Optional(
    Type.String({ description: "The payment provider's reason, after a declined payment." }),
  ),
  request_id: Type.String(),
});
export type PaymentProblem = Static<typeof PaymentProblem>;

/** The service's generic problem (invalid request body, setup still running), typed as MPP types it. */
export const ServiceProblem = Type.Object({
  ...ProblemSchema.properties,
  type: Type.String({
    description:
      '`https://paymentauth.org/problems/bad-request` for a 400, `https://paymentauth.org/problems/internal-payment-error` ' +
      'for a 500, `about:blank` otherwise: the status and `code` say what happened.',
  }),
});
export type ServiceProblem = Problem;
