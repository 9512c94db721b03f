// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  checkEntitlement,
  describeEntitlements,
  describePlanLimit,
  type Entitlements,
  PLAN_ENTITLEMENTS,
  PLANS,
  type PlanId,
} from '../../src/catalog/index.ts';

const PAID_IN_ORDER: readonly PlanId[] = ['starter', 'pro', 'enterprise'];
const NAMES = Object.keys(PLAN_ENTITLEMENTS.free) as (keyof Entitlements)[];

describe('plan entitlements', () => {
  it('name every plan, Free the smallest in everything, each larger plan at least the one before', () => {
    assert.deepEqual(Object.keys(PLAN_ENTITLEMENTS).sort(), Object.keys(PLANS).sort());
    let previous = PLAN_ENTITLEMENTS.free;
    for (const plan of PAID_IN_ORDER) {
      for (const name of NAMES) {
        assert.ok(PLAN_ENTITLEMENTS[plan][name] > PLAN_ENTITLEMENTS.free[name], `${plan} ${name} above Free`);
        assert.ok(PLAN_ENTITLEMENTS[plan][name] >= previous[name], `${plan} ${name}`);
      }
      previous = PLAN_ENTITLEMENTS[plan];
    }
  });

  it('allow up to the limit and refuse the first addition over it, naming the limit and the plan', () => {
    const limit = PLAN_ENTITLEMENTS.free.webhookSubscriptions;
    assert.equal(checkEntitlement('free', 'webhook_subscriptions', limit - 1), undefined);
    assert.deepEqual(checkEntitlement('free', 'webhook_subscriptions', limit), {
      code: 'plan_limit_reached',
      resource: 'webhook_subscriptions',
      limit,
      plan: 'free',
    });
    const bytes = PLAN_ENTITLEMENTS.free.evidenceStorageBytes;
    assert.equal(checkEntitlement('free', 'evidence_storage_bytes', bytes - 10, 10), undefined);
    assert.equal(
      checkEntitlement('free', 'evidence_storage_bytes', bytes - 10, 11)?.code,
      'plan_limit_reached',
    );
  });

  it('state a refusal with the allowance and where to upgrade', () => {
    const refusal = checkEntitlement(
      'free',
      'evidence_storage_bytes',
      0,
      PLAN_ENTITLEMENTS.free.evidenceStorageBytes + 1,
    );
    assert.ok(refusal);
    assert.equal(
      describePlanLimit(refusal, 'https://svc.example/w/ws_1/billing'),
      'The Free plan allows 100 MiB of evidence files; this would go over it. Remove something first, ' +
        'or choose a larger plan at https://svc.example/w/ws_1/billing.',
    );
    const oneKey = checkEntitlement('free', 'api_keys', PLAN_ENTITLEMENTS.free.apiKeys, 1);
    assert.ok(oneKey);
    assert.match(
      describePlanLimit(oneKey, 'https://svc.example/w/ws_1/billing'),
      /^The Free plan allows 1 active API key;/,
    );
    assert.equal(
      describeEntitlements('pro'),
      'up to 50 members, 20 API keys, 20 webhook subscriptions, 50 GiB of evidence storage, ' +
        '600 API requests per minute per key',
    );
  });
});
