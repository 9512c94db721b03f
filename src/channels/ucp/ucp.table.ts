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
