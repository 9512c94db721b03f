// db-scope: both

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { inTransaction } from '../../src/db/transaction.ts';
import { publishEvent } from '../../src/webhooks/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebhookFixture } from './fixture.ts';
import { startReceiver } from './receiver.ts';

const BACKLOG = 121;

/** A loopback port that was just closed: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe(`webhook receivers isolated from each other on ${testDialect}`, () => {
  it('delivers to a healthy receiver within a second or two while a dead and a hanging receiver each have a backlog of 121', async (t) => {
    const hooks = await startWebhookFixture(t, { timeoutMs: 3000 });
    const { api } = hooks;
    const hanging = await startReceiver(t);
    hanging.answer(() => 'hang');
    const dead = await hooks.subscribe(['task.created'], `http://127.0.0.1:${await closedPort()}/dead`);
    const slow = await hooks.subscribe(['task.created'], `${hanging.url}/slow`);
    await hooks.subscribe(['risk.created']);
    await hooks.deliver(); // the owner's invitation email, so only deliveries remain
    const { db } = api.runtime.database;
    await inTransaction(db, async (trx) => {
      for (let n = 0; n < BACKLOG; n++) {
        await publishEvent(trx, api.runtime.clock, {
          workspaceId: api.org.workspaceId,
          type: 'task.created',
          data: { title: `Backlog ${n}` },
        });
      }
    });

    api.runtime.jobs.start();
    t.after(() => api.runtime.jobs.stop());
    await hanging.waitFor(1);
    await new Promise((resolve) => setTimeout(resolve, 300));

    const started = performance.now();
    const risk = await api.call('POST', '/risks', {
      json: { title: 'Laptop theft', likelihood: 3, impact: 4 },
    });
    assert.equal(risk.status, 201);
    const [request] = await hooks.receiver.waitFor(1, 10_000);
    const elapsedMs = performance.now() - started;
    assert.equal(JSON.parse(request?.body ?? '{}').type, 'risk.created');
    assert.ok(elapsedMs < 2000, `the healthy receiver waited ${Math.round(elapsedMs)} ms`);

    const pending = async (subscriptionId: string) =>
      Number(
        (
          await db
            .selectFrom('webhook_deliveries')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('subscription_id', '=', subscriptionId)
            .where('status', '=', 'pending')
            .where('attempt_count', '=', 0)
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.ok((await pending(dead.id)) > 100, 'the dead receiver is backed off, not worked through');
    assert.ok((await pending(slow.id)) > 100, 'the hanging receiver is worked a few at a time');
    assert.ok(hanging.requests.length <= 4, `${hanging.requests.length} requests hang at once`);
    const hold = await db
      .selectFrom('job_key_holds')
      .selectAll()
      .where('concurrency_key', '=', `webhook:${dead.id}`)
      .executeTakeFirst();
    assert.ok(hold?.held_until, 'the dead receiver is held back after failing in a row');
  });
});
