import type { Config } from '../../config.ts';

/** The UCP release this service speaks by default and advertises in its profile. */
export const UCP_VERSION = '2026-08-25';
/**
 * Every release an agent may negotiate (by the `version` it states in `UCP-Agent`), newest
 * first. 2026-04-08 is kept for agents built on it: its checkout wire is the same for what this
 * service sells; only the version stamps and the profile's schema URLs differ.
 */
export const UCP_VERSIONS = [UCP_VERSION, '2026-04-08'] as const;
export type UcpVersion = (typeof UCP_VERSIONS)[number];

export function isSupportedVersion(version: string): version is UcpVersion {
  return (UCP_VERSIONS as readonly string[]).includes(version);
}
export const SHOPPING_SERVICE = 'dev.ucp.shopping';
export const CHECKOUT_CAPABILITY = 'dev.ucp.shopping.checkout';
export const PAYMENT_HANDLER_NAME = 'com.psp.payments';
/** The handler instance id that payment instruments name in `handler_id`. */
export const PAYMENT_HANDLER_ID = 'psp_payments';
export const INSTRUMENT_TYPE = 'card';
export const CREDENTIAL_TYPE = 'psp_payment_token';
/** Where the REST binding is mounted; discovery advertises it as the service endpoint. */
export const UCP_PATH_PREFIX = '/api/ucp/v1';

/** The published documents of one release, as the profile names them. */
export function specUrls(version: UcpVersion) {
  return {
    overview: `https://ucp.dev/${version}/specification/overview/`,
    restSchema: `https://ucp.dev/${version}/services/shopping/rest.openapi.json`,
    checkoutSpec: `https://ucp.dev/${version}/specification/shopping/checkout`,
    checkoutSchema: `https://ucp.dev/${version}/schemas/shopping/checkout.json`,
  } as const;
}

export interface PaymentHandlerEntry {
  id: string;
  version: string;
  available_instruments: { type: string }[];
  /** The handler's own settings: where tokens are scoped, and the credential type a complete sends. */
  config: { network_profile_id: string; credential_types: string[] };
}

/** The card handler of the payment provider: the agent tokenizes the card there and sends the token. */
export function paymentHandlers(
  config: Config,
  version: UcpVersion = UCP_VERSION,
): Record<typeof PAYMENT_HANDLER_NAME, PaymentHandlerEntry[]> {
  return {
    [PAYMENT_HANDLER_NAME]: [
      {
        id: PAYMENT_HANDLER_ID,
        version,
        available_instruments: [{ type: INSTRUMENT_TYPE }],
        config: { network_profile_id: config.psp.networkProfileId, credential_types: [CREDENTIAL_TYPE] },
      },
    ],
  };
}

/** The `ucp` member every checkout response carries, stamped with the negotiated release. */
export function checkoutEnvelope(config: Config, version: UcpVersion) {
  return {
    version,
    capabilities: { [CHECKOUT_CAPABILITY]: [{ version }] },
    payment_handlers: paymentHandlers(config, version),
  };
}

/**
 * The body as the release the request negotiated: the `ucp` member of a checkout or an
 * error_response names that release (and so do the checkout's capability and handler entries).
 * Everything else on the wire is the same in every release this service speaks.
 */
export function inRelease(body: unknown, config: Config, version: UcpVersion): unknown {
  if (version === UCP_VERSION || typeof body !== 'object' || body === null || !('ucp' in body)) return body;
  const envelope = body.ucp as { status?: string };
  const ucp = envelope.status === 'error' ? { version, status: 'error' } : checkoutEnvelope(config, version);
  return { ...body, ucp };
}
