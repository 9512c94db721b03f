export type SubscriptionStatus = 'enabled' | 'disabled';
/**
 * `user` (PATCH), `gone` (the receiver answered 410), `failing` (every attempt failed for a day) or
 * `plan_limit` (over the plan's subscriptions when the workspace moved to a smaller plan).
 */
export type DisabledReason = 'user' | 'gone' | 'failing' | 'plan_limit';
/** The reasons deliveries themselves disable a subscription for (the owner is emailed). */
export type FailureReason = Extract<DisabledReason, 'gone' | 'failing'>;

export interface WebhookSubscriptionsTable {
  id: string;
  workspace_id: string;
  url: string;
  description: string | null;
  /** JSON array of event type names. */
  event_types: string;
  /** `whsec_` + base64 key. The server signs with it, so it cannot be stored as a hash. */
  secret: string;
  /** After a rotation the old secret signs alongside the new one until it expires. */
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
  status: SubscriptionStatus;
  disabled_reason: DisabledReason | null;
  /** The first failed attempt since the last success; null while healthy. */
  failing_since: number | null;
  last_success_at: number | null;
  created_at: number;
  updated_at: number;
}

/** The outbox: one row per change, written in the transaction that made the change. */
export interface WebhookEventsTable {
  id: string;
  workspace_id: string;
  type: string;
  /** The exact JSON body every delivery of the event sends. */
  payload: string;
  created_at: number;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed' | 'cancelled';

export interface WebhookDeliveriesTable {
  id: string;
  event_id: string;
  subscription_id: string;
  workspace_id: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: number | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

export interface WebhookAttemptsTable {
  id: string;
  delivery_id: string;
  attempt_number: number;
  started_at: number;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_excerpt: string | null;
}

declare module '../db/schema.ts' {
  interface Database {
    webhook_subscriptions: WebhookSubscriptionsTable;
    webhook_events: WebhookEventsTable;
    webhook_deliveries: WebhookDeliveriesTable;
    webhook_attempts: WebhookAttemptsTable;
  }
}
