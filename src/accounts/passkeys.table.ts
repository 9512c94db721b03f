/** A passkey (WebAuthn credential) an account signs in with. */
export interface PasskeysTable {
  id: string;
  user_id: string;
  /** The credential id the authenticator chose, base64url: how an assertion names its passkey. */
  credential_id: string;
  /** COSE public key, base64url. */
  public_key: string;
  /** The authenticator's signature counter at its last use; 0 for authenticators that keep none. */
  counter: number;
  /** JSON array of the transports the browser reported (`internal`, `hybrid`, ...). */
  transports: string;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

/**
 * A challenge handed to a browser for one registration or sign-in, stored as its SHA-256 and
 * deleted when used: valid once, until `expires_at`, and only for the browser (session or form
 * cookie) it was issued to.
 */
export interface PasskeyChallengesTable {
  challenge_hash: string;
  purpose: 'register' | 'sign_in';
  /** SHA-256 of the issuing browser's form token (derived from its session or form cookie). */
  binding_hash: string;
  /** The account a registration is for; null for a sign-in. */
  user_id: string | null;
  expires_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    passkeys: PasskeysTable;
    passkey_challenges: PasskeyChallengesTable;
  }
}
