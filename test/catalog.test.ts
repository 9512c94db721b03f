// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findSellableItem, SELLABLE_ITEMS, termEnd } from '../src/catalog/index.ts';

// The spec's table of sellable items, copied by hand so the catalog is checked against the spec.
const SPEC_ITEMS = [
  ['svc-starter-monthly', 'starter', 'month', 9900],
  ['svc-starter-annual', 'starter', 'year', 99900],
  ['svc-pro-monthly', 'pro', 'month', 29900],
  ['svc-pro-annual', 'pro', 'year', 309900],
  ['svc-enterprise-monthly', 'enterprise', 'month', 199900],
  ['svc-enterprise-annual', 'enterprise', 'year', 1999000],
] as const;

describe('catalog', () => {
  it('sells exactly the six items of the spec, at its amounts, in usd', () => {
    assert.deepEqual(
      SELLABLE_ITEMS.map((item) => [item.id, item.price.plan, item.price.term, item.price.amount]),
      SPEC_ITEMS.map((row) => [...row]),
    );
    for (const item of SELLABLE_ITEMS) {
      assert.equal(item.price.currency, 'usd');
      assert.ok(Number.isInteger(item.price.amount));
    }
  });

  it('finds each sellable item with its price record', () => {
    for (const [id, plan, term, amount] of SPEC_ITEMS) {
      const found = findSellableItem(id);
      assert.ok(found.ok);
      assert.deepEqual(
        { plan: found.value.price.plan, term: found.value.price.term, amount: found.value.price.amount },
        { plan, term, amount },
      );
    }
  });

  it('rejects an unknown item with a typed error', () => {
    assert.deepEqual(findSellableItem('svc-gold-monthly'), {
      ok: false,
      error: { code: 'unknown_item', itemId: 'svc-gold-monthly' },
    });
    assert.equal(findSellableItem('').ok, false);
  });

  it('rejects MSP, add-ons and credit packs as not sellable to agents', () => {
    for (const id of [
      'svc-msp-monthly',
      'svc-msp-annual',
      'svc-addon-additional-framework',
      'svc-credits-ai-500',
    ]) {
      const found = findSellableItem(id);
      assert.equal(found.ok, false, id);
      if (!found.ok) assert.equal(found.error.code, 'not_sellable', id);
    }
  });
});

describe('term end', () => {
  it('is one calendar month or year after the start', () => {
    assert.equal(
      termEnd(new Date('2026-03-15T10:00:00Z'), 'month').toISOString(),
      '2026-04-15T10:00:00.000Z',
    );
    assert.equal(termEnd(new Date('2026-03-15T10:00:00Z'), 'year').toISOString(), '2027-03-15T10:00:00.000Z');
    assert.equal(
      termEnd(new Date('2026-12-20T00:00:00Z'), 'month').toISOString(),
      '2027-01-20T00:00:00.000Z',
    );
  });

  it('clamps to the last day of a shorter month', () => {
    assert.equal(
      termEnd(new Date('2026-01-31T08:00:00Z'), 'month').toISOString(),
      '2026-02-28T08:00:00.000Z',
    );
    assert.equal(termEnd(new Date('2028-02-29T08:00:00Z'), 'year').toISOString(), '2029-02-28T08:00:00.000Z');
  });
});
