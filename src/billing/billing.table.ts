import type { PlanId, TermLength } from '../catalog/index.ts';

/** `open` until paid (`fulfilled`, once) or ended unpaid at the provider (`expired`). */
export type BillingCheckoutStatus = 'open' | 'fulfilled' | 'expired';

/** One hosted checkout started on the Billing page, keyed on the provider's checkout id. */
export interface BillingCheckoutsTable {
  id: string;
  provider_checkout_id: string;
  workspace_id: string;
  item_id: string;
  plan: PlanId;
  term: TermLength;
  /** The catalog price when the checkout started, in cents: what the paid session must match. */
  amount: number;
  currency: 'usd';
  started_by_user_id: string;
  /** The account's address at the start: the order's buyer and the audit event's actor. */
  started_by_email: string;
  status: BillingCheckoutStatus;
  order_id: string | null;
  created_at: number;
  updated_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    billing_checkouts: BillingCheckoutsTable;
  }
}
