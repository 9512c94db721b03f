import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import type { TargetPolicy, TargetRefusal } from './target.ts';

/** What managing subscriptions needs: the database, the clock and the outbound-target policy. */
export interface WebhookDeps {
  db: Db;
  clock: Clock;
  targets: TargetPolicy;
}

/** Bounds that keep one workspace's fan-out (and our outbound traffic) in check. */
export const MAX_SUBSCRIPTIONS_PER_WORKSPACE = 20;

/** What a subscription change can run into besides success; the API answers 404, 400 or 409. */
export type WebhookError =
  | { code: 'not_found' }
  | { code: 'target_refused'; refusal: TargetRefusal }
  | { code: 'subscription_limit_reached'; limit: number }
  /** Test events and redeliveries go only to enabled subscriptions. */
  | { code: 'subscription_disabled' };

export const notFound = { code: 'not_found' } as const;
