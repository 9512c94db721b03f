import type { FastifyInstance } from 'fastify';
import { formatBytes, PLAN_ENTITLEMENTS, PLANS, type PlanId, SELLABLE_ITEMS } from '../../catalog/index.ts';
import { ASSET_FILES, sendNotFound, sendPage } from '../render.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A static file of the app: served without looking at the session. */
    asset?: boolean;
  }
}

/** The six plan terms agents can buy, grouped by plan, in catalog order. */
function plansOnSale() {
  const plans = new Map<
    PlanId,
    { id: PlanId; name: string; items: { id: string; amount: number; termLabel: string }[] }
  >();
  for (const item of SELLABLE_ITEMS) {
    const plan = item.price.plan;
    const entry = plans.get(plan) ?? { id: plan, name: PLANS[plan].name, items: [] };
    entry.items.push({
      id: item.id,
      amount: item.price.amount,
      termLabel: item.price.term === 'month' ? 'for one month' : 'for one year',
    });
    plans.set(plan, entry);
  }
  return [...plans.values()];
}

const ENTITLEMENT_TABLE_PLANS: readonly PlanId[] = ['free', 'starter', 'pro', 'enterprise'];

/** What each plan includes, one row per entitlement, read from the catalog's table. */
function entitlementTable() {
  const row = (label: string, cell: (plan: PlanId) => string) => ({
    label,
    cells: ENTITLEMENT_TABLE_PLANS.map(cell),
  });
  const of = (plan: PlanId) => PLAN_ENTITLEMENTS[plan];
  return {
    plans: ENTITLEMENT_TABLE_PLANS.map((plan) => PLANS[plan].name),
    rows: [
      row('Members and pending invitations', (plan) => String(of(plan).members)),
      row('API keys', (plan) => String(of(plan).apiKeys)),
      row('Webhook subscriptions', (plan) => String(of(plan).webhookSubscriptions)),
      row('Evidence storage', (plan) => formatBytes(of(plan).evidenceStorageBytes)),
      row('API requests per minute, per key', (plan) => String(of(plan).apiRequestsPerMinute)),
    ],
  };
}

export function publicRoutes(app: FastifyInstance): void {
  const plans = plansOnSale();
  const entitlements = entitlementTable();
  app.get('/', async (request, reply) =>
    sendPage(request, reply, 'home', {
      title: 'Compliance workspaces for AI agents to buy',
      plans,
      entitlements,
    }),
  );
  app.get('/legal/terms', async (request, reply) =>
    sendPage(request, reply, 'terms', { title: 'Terms of service' }),
  );
  app.get('/legal/privacy', async (request, reply) =>
    sendPage(request, reply, 'privacy', { title: 'Privacy notice' }),
  );

  app.get<{ Params: { name: string } }>(
    '/assets/:name',
    { config: { asset: true } },
    async (request, reply) => {
      const asset = ASSET_FILES.get(request.params.name);
      if (!asset) return sendNotFound(request, reply);
      const immutable = (request.query as { v?: string }).v === asset.version;
      return reply
        .type(asset.type)
        .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
        .send(asset.body);
    },
  );
}
