import type { AuditAction } from './actions.ts';

/** One audited change; written in the transaction of the change, never updated. */
export interface AuditEventsTable {
  /** `aud_...`, time-ordered: the lists are newest first by id. */
  id: string;
  /** Null for account-level events (a failed sign-in with an address that has no account). */
  workspace_id: string | null;
  action: AuditAction;
  actor_user_id: string | null;
  actor_api_key_id: string | null;
  /** Who acted, as shown at the time: an address, a key's name and prefix, `System`, `Operator`. */
  actor_label: string;
  target_type: string | null;
  target_id: string | null;
  target_label: string | null;
  ip: string | null;
  user_agent: string | null;
  /** JSON `{field: {from, to}}`: what an edit of a record changed; null where nothing is itemised. */
  changes: string | null;
  created_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    audit_events: AuditEventsTable;
  }
}
