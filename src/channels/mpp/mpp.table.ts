/**
 * One row per challenge id that a paying request has claimed: the first request to claim an id
 * owns it, and only the identical request (same item, body and token) may use it again.
 */
export interface MppChallengeClaimsTable {
  challenge_id: string;
  item_id: string;
  /** SHA-256 over the item, the request body and the token, so no token is kept here. */
  fingerprint: string;
  /** When the challenge expired (epoch ms); the claim is kept a while longer for repeats. */
  expires_at: number;
  created_at: number;
}

/** Secrets the channel generates once and every instance shares (the challenge-id HMAC key). */
export interface MppServerSecretsTable {
  name: string;
  secret: string;
  created_at: number;
}

declare module '../../db/schema.ts' {
  interface Database {
    mpp_challenge_claims: MppChallengeClaimsTable;
    mpp_server_secrets: MppServerSecretsTable;
  }
}
