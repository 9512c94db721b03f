/**
 * The channel-neutral lifecycle; ACP and UCP name these states in their own words.
 * - `not_ready`: no buyer email yet.
 * - `ready`: can be paid.
 * - `paying`: a complete claimed it and its latest payment attempt is under way (or done and not
 *   yet applied here); nothing else may change it until that attempt's outcome is applied.
 * - `completed`: paid and provisioned; carries the order.
 * - `canceled`: abandoned by the agent.
 * - `expired`: one hour passed without payment (an open session past its hour reads as expired
 *   before the sweep writes it).
 */
export type SessionStatus = 'not_ready' | 'ready' | 'paying' | 'completed' | 'canceled' | 'expired';

export interface CheckoutSessionsTable {
  /** Internal id; the public session id is a bearer secret and only its hash is stored. */
  id: string;
  id_hash: string;
  channel: 'acp' | 'ucp';
  status: SessionStatus;
  item_id: string;
  buyer_email: string | null;
  buyer_first_name: string | null;
  buyer_last_name: string | null;
  buyer_full_name: string | null;
  buyer_phone_number: string | null;
  company_name: string | null;
  /** Payment attempts started; attempt n is charged under the key `<channel>:<id>:<n>`. */
  attempt_count: number;
  /** Incremented by every write; each transition is conditional on the version it read. */
  version: number;
  /** Why the last payment attempt failed, shown until the next attempt. */
  payment_error_code: string | null;
  payment_error_message: string | null;
  order_id: string | null;
  expires_at: number;
  created_at: number;
  updated_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    checkout_sessions: CheckoutSessionsTable;
  }
}
