/**
 * A client of the authorization server: `metadata_document` when its `client_id` is the https URL
 * of its Client ID Metadata Document (re-read when older than a day), `registered` when it came
 * through dynamic registration (RFC 7591; `client_id` is ours). Every client is public (PKCE).
 */
export interface OAuthClientsTable {
  id: string;
  client_id: string;
  kind: 'metadata_document' | 'registered';
  /** `client_name` as the client gave it: what the consent page, Integrations and the audit log show. */
  name: string;
  client_uri: string | null;
  /** JSON array of the exact redirect URIs allowed. */
  redirect_uris: string;
  created_at: number;
  /** When the metadata was last read (documents) or registered. */
  refreshed_at: number;
}

/** A person's consent: this client may act in this workspace on their behalf, reading or also writing. */
export interface OAuthGrantsTable {
  id: string;
  client_ref: string;
  workspace_id: string;
  user_id: string;
  /** The address at consent time, for the audit trail's "on behalf of". */
  user_email: string;
  access: 'read' | 'write';
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** A single-use authorization code (10 minutes); only its SHA-256 is kept. */
export interface OAuthCodesTable {
  code_hash: string;
  grant_id: string;
  redirect_uri: string;
  /** The S256 PKCE challenge. */
  code_challenge: string;
  /** The RFC 8707 resource the tokens will be bound to. */
  resource: string;
  expires_at: number;
  used_at: number | null;
}

/**
 * Access tokens (short-lived) and refresh tokens (rotated: `used_at` is set when exchanged, and a
 * used one presented again revokes the grant). Only the SHA-256 of each is kept.
 */
export interface OAuthTokensTable {
  id: string;
  grant_id: string;
  kind: 'access' | 'refresh';
  token_hash: string;
  resource: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
}

declare module '../db/schema.ts' {
  interface Database {
    oauth_clients: OAuthClientsTable;
    oauth_grants: OAuthGrantsTable;
    oauth_codes: OAuthCodesTable;
    oauth_tokens: OAuthTokensTable;
  }
}
