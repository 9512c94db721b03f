import Stripe from 'stripe';

/** Where shared payment tokens are minted: the PSP sandbox of `npm start` unless told otherwise. */
export interface PspSandbox {
  url: string;
  key: string;
}

/** `npm start`'s sandbox: on `PSP_SANDBOX_PORT` when the shell sets it, as it does for the service. */
export const SANDBOX_DEFAULTS: PspSandbox = {
  url: `http://127.0.0.1:${process.env.PSP_SANDBOX_PORT || '12111'}`,
  key: 'sk_test_sandbox',
};
/** The provider's API version of shared-payment-token calls. */
const SPT_API_VERSION = '2026-07-29.preview';

export interface MintRequest {
  amount: number;
  currency: string;
  /** A test payment method of the sandbox (see the README's table); it decides what charging does. */
  paymentMethod: string;
  /** Unix seconds; an hour from now unless the payment asks for less. */
  expiresAt?: number;
}

/** Mints a single-use shared payment token for at most `amount` with the provider's official SDK. */
export async function mintSandboxToken(psp: PspSandbox, mint: MintRequest): Promise<string> {
  if (!psp.key.startsWith('sk_test_'))
    throw new Error('tokens are minted only with a test key (sk_test_...)');
  const url = new URL(psp.url);
  const stripe = new Stripe(psp.key, {
    host: url.hostname,
    port: Number(url.port || (url.protocol === 'https:' ? 443 : 80)),
    protocol: url.protocol === 'https:' ? 'https' : 'http',
    maxNetworkRetries: 2,
  });
  const token = await stripe.rawRequest(
    'POST',
    '/v1/test_helpers/shared_payment/granted_tokens',
    {
      payment_method: mint.paymentMethod,
      usage_limits: {
        currency: mint.currency,
        max_amount: mint.amount,
        expires_at: mint.expiresAt ?? Math.floor(Date.now() / 1000) + 3600,
      },
    },
    { apiVersion: SPT_API_VERSION },
  );
  return String(token.id);
}
