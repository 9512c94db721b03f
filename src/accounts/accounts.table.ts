/** A person who signs in to the app. */
export interface UsersTable {
  id: string;
  /** As the person gave it. */
  email: string;
  /** `normalizeEmail(email)`: unique, so addresses differing only in case are one account. */
  email_key: string;
  /** Argon2id PHC string; null for an account that signs in another way (later: passkeys, email links). */
  password_hash: string | null;
  created_at: number;
  updated_at: number;
}

/** A signed-in browser; the cookie carries the secret, the table only its SHA-256. */
export interface SessionsTable {
  id: string;
  token_hash: string;
  user_id: string;
  created_at: number;
  /** Updated at most once a minute; the idle timeout counts from here. */
  last_seen_at: number;
  /** The absolute timeout: the session ends here however active it is. */
  expires_at: number;
}

/** Guesses counted per key (`account:<sha256 of the address>`, `ip:<address>`) in a fixed window. */
export interface AuthThrottlesTable {
  key: string;
  attempts: number;
  window_started_at: number;
}

export type AccountLinkPurpose = 'sign_in' | 'password_reset' | 'email_change';

/** An emailed one-time link; the email carries the secret, the table only its SHA-256. */
export interface AccountLinksTable {
  id: string;
  user_id: string;
  purpose: AccountLinkPurpose;
  token_hash: string;
  /** `email_change` only: the address the account changes to, as the person gave it. */
  new_email: string | null;
  created_at: number;
  expires_at: number;
  /** Set by the one request that used the link. */
  used_at: number | null;
}

declare module '../db/schema.ts' {
  interface Database {
    users: UsersTable;
    sessions: SessionsTable;
    auth_throttles: AuthThrottlesTable;
    account_links: AccountLinksTable;
  }
}
