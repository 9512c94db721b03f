import type { PlanId, PlanLimitReached } from '../catalog/index.ts';
import type { Db, Tx } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import type { TargetPolicy, TargetRefusal } from './target.ts';
import type { SubscriptionStatus } from './webhooks.table.ts';

/**
 * Takes the workspace's row until the transaction ends and answers its plan; undefined when there
 * is no such workspace. The workspace module's `lockWorkspace`: the module that owns the row, above
 * this one, hands it in, as every change counted against the plan serializes on it.
 */
export type WorkspaceLock = (trx: Tx, workspaceId: string) => Promise<{ plan: PlanId } | undefined>;

/**
 * What managing subscriptions needs: the database, the clock, the outbound-target policy and the
 * workspace's lock.
 */
export interface WebhookDeps {
  db: Db;
  clock: Clock;
  targets: TargetPolicy;
  lockWorkspace: WorkspaceLock;
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
