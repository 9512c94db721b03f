/**
 * The business's message-signing keys (ES256, P-256). The newest key not retired signs; every key
 * whose `publish_until` has not passed is published in the UCP profile's `keys`.
 */
export interface SigningKeysTable {
  kid: string;
  /** The public JWK as JSON (kty, crv, x, y, kid, use, alg). */
  public_jwk: string;
  /** The private key (PKCS#8 PEM), sealed with SIGNING_KEYS_SECRET when set; see keys.ts. */
  private_key: string;
  created_at: number;
  /** When a newer key took over signing; null for the key that signs. */
  retired_at: number | null;
  /** The end of a retired key's grace: published (still verifying) until then. */
  publish_until: number | null;
}

declare module '../db/schema.ts' {
  interface Database {
    signing_keys: SigningKeysTable;
  }
}
