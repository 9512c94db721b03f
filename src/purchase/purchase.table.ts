import type { PlanId, TermLength } from '../catalog/index.ts';

/**
 * - `pending`: recorded; the charge has not been made or its outcome is not known yet.
 * - `charged`: the provider took the money; provisioning is owed.
 * - `completed`: order, workspace, invitation and its email are committed.
 * - `declined`: refused by the provider (including 3-D Secure required); nothing was charged.
 * - `failed`: the provider rejected the request itself (configuration, bug); nothing was charged.
 * - `needs_review`: still unknown when the provider's idempotency window closed; asking again
 *   could charge anew, so it is never sent again and a person settles it (docs/operations.md).
 */
export type AttemptStatus = 'pending' | 'charged' | 'completed' | 'declined' | 'failed' | 'needs_review';

/** One try to pay for one item with one token, under the key the channel derives from its own handle. */
export interface PaymentAttemptsTable {
  id: string;
  attempt_key: string;
  channel: string;
  item_id: string;
  plan: PlanId;
  term: TermLength;
  amount: number;
  currency: 'usd';
  buyer_email: string;
  buyer_name: string | null;
  company_name: string | null;
  /** SHA-256 of the token: the same attempt key with another token is a different request. */
  token_hash: string;
  /** Kept only while the outcome is unknown, so recovery can ask the provider again; erased after. */
  token: string | null;
  /** Assigned up front so the provider's metadata names the order the charge pays for. */
  order_id: string;
  psp_idempotency_key: string;
  status: AttemptStatus;
  /** While set in the future, one request is charging this attempt; others wait. */
  locked_until: number | null;
  /** The instance holding the charge lease; a retry takes the lease over once it is known gone. */
  locked_by: string | null;
  payment_intent_id: string | null;
  /** When the provider confirmed the charge; the term starts here. */
  charged_at: number | null;
  decline_code: string | null;
  decline_message: string | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
}

export interface OrdersTable {
  id: string;
  attempt_id: string;
  channel: string;
  item_id: string;
  plan: PlanId;
  term: TermLength;
  amount: number;
  currency: 'usd';
  buyer_email: string;
  payment_intent_id: string;
  workspace_id: string;
  term_starts_at: number;
  term_ends_at: number;
  /** SHA-256 (hex) of the page key of a link published before keys were derived; see order-page.ts. */
  page_key_hash: string | null;
  created_at: number;
}

/** Secrets of the purchase module that every instance shares (the order links' HMAC key). */
export interface PurchaseSecretsTable {
  name: string;
  secret: string;
  created_at: number;
}

/** The last order state an agent's protocol was told by webhook (see progress.ts). */
export interface OrderFollowersTable {
  order_id: string;
  /** The protocol whose agent follows the order: `ucp` or `acp`. */
  follower: string;
  state: 'placed' | 'invitation_accepted' | 'term_ended';
  /** Copied from the order, so the sweep looks at accepted orders only once their term is over. */
  term_ends_at: number;
  created_at: number;
  /** When the sweep last looked; it looks at the longest-unlooked first. */
  updated_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    payment_attempts: PaymentAttemptsTable;
    orders: OrdersTable;
    purchase_secrets: PurchaseSecretsTable;
    order_followers: OrderFollowersTable;
  }
}
