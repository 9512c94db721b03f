import type { Config } from '../../config.ts';

/** The one UCP release this service speaks. */
export const UCP_VERSION = '2026-08-25';
export const SHOPPING_SERVICE = 'dev.ucp.shopping';
export const CHECKOUT_CAPABILITY = 'dev.ucp.shopping.checkout';
export const PAYMENT_HANDLER_NAME = 'com.psp.payments';
/** The handler instance id that payment instruments name in `handler_id`. */
export const PAYMENT_HANDLER_ID = 'psp_payments';
export const INSTRUMENT_TYPE = 'card';
export const CREDENTIAL_TYPE = 'psp_payment_token';
/** Where the REST binding is mounted; discovery advertises it as the service endpoint. */
export const UCP_PATH_PREFIX = '/api/ucp/v1';

export const SPEC_URLS = {
  overview: `https://ucp.dev/${UCP_VERSION}/specification/overview/`,
  restSchema: `https://ucp.dev/${UCP_VERSION}/services/shopping/rest.openapi.json`,
  checkoutSpec: `https://ucp.dev/${UCP_VERSION}/specification/shopping/checkout`,
  checkoutSchema: `https://ucp.dev/${UCP_VERSION}/schemas/shopping/checkout.json`,
} as const;

export interface PaymentHandlerEntry {
  id: string;
  version: string;
  available_instruments: { type: string }[];
  config: { network_profile_id: string };
}

/** The card handler of the payment provider: the agent tokenizes the card there and sends the token. */
export function paymentHandlers(config: Config): Record<typeof PAYMENT_HANDLER_NAME, PaymentHandlerEntry[]> {
  return {
    [PAYMENT_HANDLER_NAME]: [
      {
        id: PAYMENT_HANDLER_ID,
        version: UCP_VERSION,
        available_instruments: [{ type: INSTRUMENT_TYPE }],
        config: { network_profile_id: config.psp.networkProfileId },
      },
    ],
  };
}

/** The `ucp` member every checkout response carries. */
export function checkoutEnvelope(config: Config) {
  return {
    version: UCP_VERSION,
    capabilities: { [CHECKOUT_CAPABILITY]: [{ version: UCP_VERSION }] },
    payment_handlers: paymentHandlers(config),
  };
}
