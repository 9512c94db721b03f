/** An API key of one workspace; the key itself is never stored, only its SHA-256. */
export interface ApiKeysTable {
  id: string;
  workspace_id: string;
  name: string;
  key_hash: string;
  /** The start of the key (`svc_live_` and four characters), for recognising it in lists. */
  prefix: string;
  last_four: string;
  /** Set on a key made by rotating another one. */
  replaces_key_id: string | null;
  created_at: number;
  /** Written at most once a minute per key, not on every request. */
  last_used_at: number | null;
  /** The key stops working at this instant; a rotation may set it in the future. */
  revoked_at: number | null;
  /** The app account that created the key; null for keys made by operators (CLI). */
  created_by_user_id: string | null;
  /** The key stops working at this instant; chosen when it is created. */
  expires_at: number | null;
}

declare module '../db/schema.ts' {
  interface Database {
    api_keys: ApiKeysTable;
  }
}
