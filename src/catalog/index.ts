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
