import type { FastifyInstance } from 'fastify';
import { type ApiError, invalidRequest, resourceMissing } from './errors.ts';
import {
  bodyParams,
  type Params,
  readInteger,
  readObject,
  readString,
  readStringMap,
  requireCurrency,
  requireInteger,
  requireString,
} from './form.ts';
import { randomId } from './ids.ts';
import type { GrantedTokenRecord, SandboxState } from './state.ts';
import { findTestPaymentMethod } from './test-cards.ts';
import type { DeactivatedReason, GrantedToken } from './types.ts';

export const MAX_AMOUNT = 99_999_999;
const LATEST_UNIX_SECONDS = 253_402_300_799; // 9999-12-31T23:59:59Z
const AGENT_NETWORK_PROFILE = 'profile_test_sandboxagent';
const CARD_VALIDITY_YEARS = 3;

const DEACTIVATION_EXPLANATIONS: Record<DeactivatedReason, string> = {
  consumed: 'has already been used',
  expired: 'has expired',
  resolved: 'was resolved by a seller',
  revoked: 'was revoked by its issuer',
};

export interface TokenReference {
  readonly id: string;
  /** The parameter spelling the caller used, reported back in errors. */
  readonly param: string;
}

interface IdParams {
  readonly id: string;
}

export function registerGrantedTokenRoutes(app: FastifyInstance, state: SandboxState): void {
  app.post('/v1/test_helpers/shared_payment/granted_tokens', async (request) =>
    createGrantedToken(bodyParams(request.body), state),
  );
  app.post<{ Params: IdParams }>(
    '/v1/test_helpers/shared_payment/granted_tokens/:id/revoke',
    async (request) => revokeGrantedToken(requireGrantedToken(state, request.params.id), state),
  );
  app.get<{ Params: IdParams }>(
    '/v1/shared_payment/granted_tokens/:id',
    async (request) => requireGrantedToken(state, request.params.id).token,
  );
}

function requireGrantedToken(state: SandboxState, id: string): GrantedTokenRecord {
  const record = state.grantedTokenRecord(id);
  if (!record) throw resourceMissing('shared_payment.granted_token', id, { status: 404 });
  return record;
}

function createGrantedToken(params: Params, state: SandboxState): GrantedToken {
  const now = state.nowSeconds();
  const paymentMethodId = requireString(params.payment_method, 'payment_method');
  const limits = readObject(params.usage_limits, 'usage_limits');
  const currency = requireCurrency(limits.currency, 'usage_limits[currency]');
  const maxAmount = requireInteger(limits.max_amount, 'usage_limits[max_amount]', {
    min: 1,
    max: MAX_AMOUNT,
  });
  const expiresAt = readInteger(limits.expires_at, 'usage_limits[expires_at]', {
    min: now + 1,
    max: LATEST_UNIX_SECONDS,
  });
  const sharedMetadata = readStringMap(params.shared_metadata, 'shared_metadata');
  // Accepted for compatibility with callers that send them (mppx, older docs); they change nothing here.
  readString(params.customer, 'customer');
  readObject(params.seller_details, 'seller_details');

  const testPaymentMethod = findTestPaymentMethod(paymentMethodId);
  if (!testPaymentMethod)
    throw resourceMissing('PaymentMethod', paymentMethodId, { param: 'payment_method' });

  const token: GrantedToken = {
    id: randomId('spt'),
    object: 'shared_payment.granted_token',
    agent_details: { network_business_profile: AGENT_NETWORK_PROFILE },
    created: now,
    deactivated_at: null,
    deactivated_reason: null,
    livemode: false,
    payment_method_details: {
      type: 'card',
      card: {
        ...testPaymentMethod.card,
        exp_month: 12,
        exp_year: new Date(now * 1000).getUTCFullYear() + CARD_VALIDITY_YEARS,
      },
    },
    shared_metadata: sharedMetadata,
    usage_details: { amount_captured: { currency, value: 0 } },
    usage_limits: { currency, max_amount: maxAmount, expires_at: expiresAt ?? null },
  };
  state.saveGrantedToken({ token, testPaymentMethodId: paymentMethodId, testPaymentMethod });
  return token;
}

/** Revoking an already deactivated token leaves its original reason in place. */
function revokeGrantedToken(record: GrantedTokenRecord, state: SandboxState): GrantedToken {
  const { token } = record;
  if (token.deactivated_reason === null) {
    token.deactivated_reason = 'revoked';
    token.deactivated_at = state.nowSeconds();
    state.saveGrantedToken(record);
  }
  return token;
}

/** Checked before any charge attempt; these 400s leave no trace (no PaymentIntent, not idempotency-stored). */
export function requireUsableToken(
  state: SandboxState,
  reference: TokenReference,
  amount: number,
  currency: string,
): GrantedTokenRecord {
  const record = state.grantedTokenRecord(reference.id);
  if (!record)
    throw resourceMissing('shared_payment.granted_token', reference.id, { param: reference.param });
  const { token } = record;
  const limits = token.usage_limits;
  if (token.deactivated_reason !== null)
    throw deactivatedTokenError(token, token.deactivated_reason, reference.param);
  if (currency !== limits.currency) {
    throw invalidRequest(
      `The currency '${currency}' does not match the shared payment token's usage_limits[currency] '${limits.currency}'.`,
      { code: 'payment_method_currency_mismatch', param: reference.param },
    );
  }
  if (amount > limits.max_amount) {
    throw invalidRequest(
      `The amount ${amount} exceeds the shared payment token's usage_limits[max_amount] of ${limits.max_amount} ${limits.currency}.`,
      { code: 'amount_too_large', param: reference.param },
    );
  }
  return record;
}

function deactivatedTokenError(token: GrantedToken, reason: DeactivatedReason, param: string): ApiError {
  return invalidRequest(
    `Shared payment token '${token.id}' ${DEACTIVATION_EXPLANATIONS[reason]} and is deactivated ` +
      `(deactivated_reason: ${reason}); it can no longer be used to confirm a PaymentIntent.`,
    {
      code: reason === 'expired' ? 'shared_payment_token_expired' : 'shared_payment_token_deactivated',
      param,
    },
  );
}

/** SPTs are single use: any successful charge deactivates the token, even below max_amount. */
export function consumeToken(state: SandboxState, record: GrantedTokenRecord, amount: number): void {
  const { token } = record;
  token.usage_details.amount_captured.value += amount;
  token.deactivated_reason = 'consumed';
  token.deactivated_at = state.nowSeconds();
  state.saveGrantedToken(record);
}
