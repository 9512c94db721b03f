// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { purchase } from '../../src/purchase/index.ts';
import { testDialect } from '../helpers/database.ts';
import { purchaseRequest, startPurchaseFixture } from '../helpers/purchase.ts';

describe('two instances on one PostgreSQL', { skip: testDialect !== 'postgres' }, () => {
  it('charge an attempt raced across both of them once', async (t) => {
    const fixture = await startPurchaseFixture(t);
    fixture.sandbox.faults.latency(30);
    const second = await fixture.startSecondInstance();

    const request = purchaseRequest(await fixture.mintToken(), { attemptKey: 'ucp:cs_two_instances:1' });
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        purchase(i % 2 ? second.purchases : fixture.runtime.purchases, request),
      ),
    );
    assert.ok(outcomes.some((o) => o.kind === 'completed'));
    assert.deepEqual(
      outcomes.filter((o) => o.kind !== 'completed' && o.kind !== 'in_progress'),
      [],
    );

    await Promise.all([fixture.runtime.jobs.drain(), second.jobs.drain()]);
    await fixture.smtp.waitFor(1);
    fixture.sandbox.faults.reset();
    assert.deepEqual(await fixture.counts(), {
      paymentIntents: 1,
      succeeded: 1,
      orders: 1,
      workspaces: 1,
      emails: 1,
    });
  });
});
