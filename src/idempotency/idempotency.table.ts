/** A response kept for an Idempotency-Key so a repeated request replays it instead of acting again. */
export interface IdempotencyKeysTable {
  /** Channel, route and resource the key is valid for. */
  scope: string;
  key: string;
  /** SHA-256 of the canonical JSON request body. */
  fingerprint: string;
  state: 'in_flight' | 'completed';
  /** While in flight: when a crashed holder's claim lapses. */
  locked_until: number | null;
  response_status: number | null;
  /** JSON text of the body; headers worth replaying as JSON text. */
  response_body: string | null;
  response_headers: string | null;
  created_at: number;
  expires_at: number;
}
