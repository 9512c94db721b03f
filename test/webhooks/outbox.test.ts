// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inTransaction } from '../../src/db/transaction.ts';
import { publishEvent } from '../../src/webhooks/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebhookFixture, type WebhookFixture } from './fixture.ts';

async function outboxRows(hooks: WebhookFixture): Promise<[number, number, number]> {
  const { db } = hooks.api.runtime.database;
  const count = async (table: 'webhook_events' | 'webhook_deliveries') =>
    Number((await db.selectFrom(table).select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
  const jobs = await db.selectFrom('jobs').select('id').where('kind', '=', 'webhook.deliver').execute();
  return [await count('webhook_events'), await count('webhook_deliveries'), jobs.length];
}

describe(`the webhook outbox on ${testDialect}`, () => {
  it('keeps an event, its deliveries and their jobs exactly when the change that published it commits', async (t) => {
    const hooks = await startWebhookFixture(t);
    await hooks.subscribe(['task.created']);
    await hooks.subscribe(['*']);
    const { db } = hooks.api.runtime.database;
    const event = {
      workspaceId: hooks.api.org.workspaceId,
      type: 'task.created' as const,
      data: { id: 'tsk_rolled_back' },
    };

    await assert.rejects(
      inTransaction(db, async (trx) => {
        await publishEvent(trx, hooks.api.runtime.clock, event);
        throw new Error('the change failed after publishing');
      }),
      /the change failed after publishing/,
    );
    assert.deepEqual(await outboxRows(hooks), [0, 0, 0]);
    await hooks.deliver();
    assert.equal(hooks.receiver.requests.length, 0);

    await inTransaction(db, (trx) => publishEvent(trx, hooks.api.runtime.clock, event));
    assert.deepEqual(await outboxRows(hooks), [1, 2, 2]);
    await hooks.deliver();
    assert.equal(hooks.receiver.requests.length, 2);
  });
});
