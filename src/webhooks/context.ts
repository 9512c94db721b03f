import type { PlanLimitReached } from '../catalog/index.ts';
import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import type { TargetPolicy, TargetRefusal } from './target.ts';
import type { SubscriptionStatus } from './webhooks.table.ts';

/** What managing subscriptions needs: the database, the clock and the outbound-target policy. */
export interface WebhookDeps {
  db: Db;
  clock: Clock;
  targets: TargetPolicy;
}

/** What a subscription change can run into besides success; the API answers 404, 400 or 409. */
export type WebhookError =
  | { code: 'not_found' }
  | { code: 'target_refused'; refusal: TargetRefusal }
  /** The workspace's plan allows no more subscriptions (see PLAN_ENTITLEMENTS). */
  | PlanLimitReached
  /** Test events and redeliveries go only to enabled subscriptions. */
  | { code: 'subscription_disabled' };

export const notFound = { code: 'not_found' } as const;

/** What delivering an event needs: the delivery job and the recording of each attempt. */
export interface DeliveryDeps {
  db: Db;
  clock: Clock;
  targets: TargetPolicy;
  timeoutMs: number;
  /** For the links in the email that tells the owner a subscription was disabled. */
  baseUrl: string;
  logger: { warn(object: object, message: string): void };
  /** Whom to tell when a subscription is disabled (the workspace module knows). */
  findOwner(db: Db, workspaceId: string): Promise<{ email: string; workspaceName: string } | undefined>;
}

/** A pending delivery whose next attempt is the one a job asks for, with what sending it needs. */
export interface DueDelivery {
  id: string;
  workspaceId: string;
  subscriptionId: string;
  eventId: string;
  payload: string;
  url: string;
  subscriptionStatus: SubscriptionStatus;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: number | null;
}
