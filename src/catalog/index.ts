import { err, ok, type Result } from '../shared/result.ts';

export type PlanId = 'free' | 'starter' | 'pro' | 'enterprise' | 'msp';
export type TermLength = 'month' | 'year';
export type Currency = 'usd';

export interface Plan {
  id: PlanId;
  name: string;
}

export const PLANS: Readonly<Record<PlanId, Plan>> = {
  free: { id: 'free', name: 'Free' },
  starter: { id: 'starter', name: 'Starter' },
  pro: { id: 'pro', name: 'Pro' },
  enterprise: { id: 'enterprise', name: 'Enterprise' },
  msp: { id: 'msp', name: 'MSP' },
};

/** What one item costs: the single source of every price the service charges. */
export interface PriceRecord {
  id: string;
  plan: PlanId;
  term: TermLength;
  /** Integer minor units (cents). */
  amount: number;
  currency: Currency;
}

export type ItemKind = 'plan_term' | 'add_on' | 'credit_pack';

export interface CatalogItem {
  id: string;
  kind: ItemKind;
  price: PriceRecord;
  /** Agent channels sell only plan terms that need no existing workspace. */
  sellableToAgents: boolean;
  description: string;
}

function planTerm(plan: PlanId, term: TermLength, amount: number, sellableToAgents: boolean): CatalogItem {
  const termName = term === 'month' ? 'monthly' : 'annual';
  return {
    id: `svc-${plan}-${termName}`,
    kind: 'plan_term',
    price: { id: `price_${plan}_${termName}`, plan, term, amount, currency: 'usd' },
    sellableToAgents,
    description: `${PLANS[plan].name} plan, one ${term} prepaid, does not renew`,
  };
}

/** Items the catalog knows; add-ons, credit packs and MSP each need an existing workspace. */
const ITEMS: readonly CatalogItem[] = [
  planTerm('starter', 'month', 9900, true),
  planTerm('starter', 'year', 99900, true),
  planTerm('pro', 'month', 29900, true),
  planTerm('pro', 'year', 309900, true),
  planTerm('enterprise', 'month', 199900, true),
  planTerm('enterprise', 'year', 1999000, true),
  planTerm('msp', 'month', 499900, false),
  planTerm('msp', 'year', 4999000, false),
  {
    id: 'svc-addon-additional-framework',
    kind: 'add_on',
    price: {
      id: 'price_addon_additional_framework',
      plan: 'free',
      term: 'month',
      amount: 4900,
      currency: 'usd',
    },
    sellableToAgents: false,
    description: 'Additional framework add-on for an existing workspace',
  },
  {
    id: 'svc-credits-ai-500',
    kind: 'credit_pack',
    price: { id: 'price_credits_ai_500', plan: 'free', term: 'month', amount: 2500, currency: 'usd' },
    sellableToAgents: false,
    description: 'Pack of 500 AI assistant credits for an existing workspace',
  },
];

const ITEMS_BY_ID = new Map(ITEMS.map((item) => [item.id, item]));

export type CatalogError =
  | { code: 'unknown_item'; itemId: string }
  | { code: 'not_sellable'; itemId: string; reason: string };

/** The items the three agent channels sell, in catalog order. */
export const SELLABLE_ITEMS: readonly CatalogItem[] = ITEMS.filter((item) => item.sellableToAgents);

/** Looks up an item the agent channels may sell; anything else is a typed error, never a price. */
export function findSellableItem(itemId: string): Result<CatalogItem, CatalogError> {
  const item = ITEMS_BY_ID.get(itemId);
  if (!item) return err({ code: 'unknown_item', itemId });
  if (!item.sellableToAgents) {
    return err({
      code: 'not_sellable',
      itemId,
      reason: `${item.description}; it is not sold through agent checkout`,
    });
  }
  return ok(item);
}

/** The end of a term that starts at `start`: one calendar month or year later (clamped to month end). */
export function termEnd(start: Date, term: TermLength): Date {
  const end = new Date(start.getTime());
  const day = end.getUTCDate();
  end.setUTCDate(1);
  if (term === 'month') end.setUTCMonth(end.getUTCMonth() + 1);
  else end.setUTCFullYear(end.getUTCFullYear() + 1);
  const lastDay = new Date(Date.UTC(end.getUTCFullYear(), end.getUTCMonth() + 1, 0)).getUTCDate();
  end.setUTCDate(Math.min(day, lastDay));
  return end;
}

/**
 * What each plan allows: the one table every limit of the service is read from. Counts are of
 * things that exist now (members and pending invitations, active API keys, webhook subscriptions
 * paused or not); storage is the bytes of every evidence file kept; the API rate is per API key.
 */
export interface Entitlements {
  members: number;
  apiKeys: number;
  webhookSubscriptions: number;
  evidenceStorageBytes: number;
  apiRequestsPerMinute: number;
}

const MIB = 1_048_576;
const GIB = 1024 * MIB;

export const PLAN_ENTITLEMENTS: Readonly<Record<PlanId, Entitlements>> = {
  free: {
    members: 3,
    apiKeys: 1,
    webhookSubscriptions: 1,
    evidenceStorageBytes: 100 * MIB,
    apiRequestsPerMinute: 60,
  },
  starter: {
    members: 10,
    apiKeys: 5,
    webhookSubscriptions: 5,
    evidenceStorageBytes: 5 * GIB,
    apiRequestsPerMinute: 300,
  },
  pro: {
    members: 50,
    apiKeys: 20,
    webhookSubscriptions: 20,
    evidenceStorageBytes: 50 * GIB,
    apiRequestsPerMinute: 600,
  },
  enterprise: {
    members: 500,
    apiKeys: 100,
    webhookSubscriptions: 100,
    evidenceStorageBytes: 500 * GIB,
    apiRequestsPerMinute: 1200,
  },
  msp: {
    members: 500,
    apiKeys: 100,
    webhookSubscriptions: 100,
    evidenceStorageBytes: 1024 * GIB,
    apiRequestsPerMinute: 1200,
  },
};

/** The limited things, as error payloads and documents name them. */
export type LimitedResource = 'members' | 'api_keys' | 'webhook_subscriptions' | 'evidence_storage_bytes';

const RESOURCE_ENTITLEMENT: Readonly<Record<LimitedResource, keyof Entitlements>> = {
  members: 'members',
  api_keys: 'apiKeys',
  webhook_subscriptions: 'webhookSubscriptions',
  evidence_storage_bytes: 'evidenceStorageBytes',
};

/** The refusal of an addition the workspace's plan does not allow; every surface states it. */
export interface PlanLimitReached {
  code: 'plan_limit_reached';
  resource: LimitedResource;
  limit: number;
  plan: PlanId;
}

/**
 * Whether the workspace may add `adding` (one item, or bytes) to the `current` amount it has.
 * What is already over the limit (after a move to Free) stays; only additions are refused.
 */
export function checkEntitlement(
  plan: PlanId,
  resource: LimitedResource,
  current: number,
  adding = 1,
): PlanLimitReached | undefined {
  const limit = PLAN_ENTITLEMENTS[plan][RESOURCE_ENTITLEMENT[resource]];
  return current + adding > limit ? { code: 'plan_limit_reached', resource, limit, plan } : undefined;
}

/** Where an owner changes the plan: the workspace's Billing page in the app. */
export function upgradeUrl(baseUrl: string, workspaceId: string): string {
  return `${baseUrl}/w/${encodeURIComponent(workspaceId)}/billing`;
}

/** Each counted resource named for one of it, then for several. */
const RESOURCE_NOUNS: Readonly<Record<LimitedResource, readonly [one: string, several: string]>> = {
  members: ['member or pending invitation', 'members and pending invitations'],
  api_keys: ['active API key', 'active API keys'],
  webhook_subscriptions: ['webhook subscription', 'webhook subscriptions'],
  evidence_storage_bytes: ['byte of evidence files', 'bytes of evidence files'],
};

/** The refusal in words, the same on the REST API, in the app and in the CLI. */
export function describePlanLimit(refusal: PlanLimitReached, billingUrl: string): string {
  const allowance =
    refusal.resource === 'evidence_storage_bytes'
      ? `${formatBytes(refusal.limit)} of evidence files`
      : `${refusal.limit} ${RESOURCE_NOUNS[refusal.resource][refusal.limit === 1 ? 0 : 1]}`;
  return (
    `The ${PLANS[refusal.plan].name} plan allows ${allowance}; this would go over it. ` +
    `Remove something first, or choose a larger plan at ${billingUrl}.`
  );
}

/** Sizes as the plans table states them: whole MiB, GiB or TiB (binary units). */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * GIB && bytes % (1024 * GIB) === 0) return `${bytes / (1024 * GIB)} TiB`;
  if (bytes >= GIB && bytes % GIB === 0) return `${bytes / GIB} GiB`;
  if (bytes >= MIB && bytes % MIB === 0) return `${bytes / MIB} MiB`;
  return `${bytes} bytes`;
}

/** One line of a plan's entitlements, for product descriptions agents read. */
export function describeEntitlements(plan: PlanId): string {
  const e = PLAN_ENTITLEMENTS[plan];
  return (
    `up to ${e.members} members, ${e.apiKeys} API keys, ${e.webhookSubscriptions} webhook subscriptions, ` +
    `${formatBytes(e.evidenceStorageBytes)} of evidence storage, ${e.apiRequestsPerMinute} API requests per minute per key`
  );
}
