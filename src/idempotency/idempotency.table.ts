/** A response kept for an Idempotency-Key so a repeated request replays it instead of acting again. */
export interface IdempotencyKeysTable {
  /** Channel, route and resource the key is valid for. */
  scope: string;
  /** SHA-256 of the Idempotency-Key. */
  key: string;
  /** SHA-256 of the canonical JSON request body. */
  fingerprint: string;
  state: 'in_flight' | 'completed';
  /**
   * While in flight: when the holder's claim lapses and a retry may take the key over (the holder
   * presumably crashed). Each claim or takeover sets a later value, so it also fences the holder's
   * own writes.
   */
  locked_until: number | null;
  /** The instance holding the key while in flight; a retry takes the key over once it is known gone. */
  locked_by: string | null;
  response_status: number | null;
  /** Body and headers as JSON, sealed with a key derived from the Idempotency-Key (see store.ts). */
  response_body: string | null;
  response_headers: string | null;
  created_at: number;
  expires_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    idempotency_keys: IdempotencyKeysTable;
  }
}
