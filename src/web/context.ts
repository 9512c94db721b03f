import type { BillingDeps } from '../billing/index.ts';
import type { EvidenceStorage } from '../compliance/index.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/schema.ts';
import type { OrderLinks } from '../purchase/index.ts';
import type { Clock } from '../shared/clock.ts';
import type { TargetPolicy } from '../webhooks/index.ts';

export interface WebDeps {
  db: Db;
  clock: Clock;
  config: Config;
  /** Where webhook subscriptions may point: the policy the REST API and the delivery job use. */
  webhookTargets: TargetPolicy;
  /** The Billing page starts hosted checkouts and settles them on return. */
  billing: BillingDeps;
  /** Opens the order pages whose links the checkouts publish. */
  orderLinks: OrderLinks;
  /** Where evidence files live: the store the REST API uploads to and downloads from. */
  evidence: EvidenceStorage;
}

/** Local development runs on plain http; everywhere else cookies are Secure and `__Host-` prefixed. */
export function isLocalDevelopmentUrl(baseUrl: string): boolean {
  const url = new URL(baseUrl);
  return url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}
