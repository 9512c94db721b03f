/**
 * A UCP platform an operator registered (`npm run svc -- ucp-platforms add`): remote profiles are
 * never fetched, so this is where the keys that verify its signed requests come from, and where
 * the order webhooks of its purchases go (its order capability's `webhook_url`).
 */
export interface UcpPlatformsTable {
  /** The profile URL its `UCP-Agent` header names. */
  profile_url: string;
  /** Its public keys: a JSON array of JWKs (the profile's `keys`). */
  keys: string;
  order_webhook_url: string | null;
  created_at: number;
  updated_at: number;
}

/**
 * A UCP order's checkout and platform. The checkout id is kept as given: the order document shows
 * it again (`checkout_id`), to the platform that paid and to no one else.
 */
export interface UcpOrdersTable {
  order_id: string;
  checkout_id: string;
  /** The registered platform whose signature verified on the paying request; null when unsigned. */
  platform_profile_url: string | null;
  created_at: number;
}

declare module '../../db/schema.ts' {
  interface Database {
    ucp_platforms: UcpPlatformsTable;
    ucp_orders: UcpOrdersTable;
  }
}
