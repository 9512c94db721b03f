// db-scope: both

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { ManualClock, MINUTE_MS } from '../../src/shared/clock.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';
import { startWebhookFixture, verifyAt } from './fixture.ts';

describe(`a webhook worker killed with SIGKILL mid-delivery on ${testDialect}`, () => {
  it('leaves the delivery to the next worker: sent again with the same webhook-id, recorded once', async (t) => {
    const database = await createTestDatabase({ shared: true });
    t.after(() => database.close());
    const clock = new ManualClock(new Date());
    const hooks = await startWebhookFixture(t, { clock, database });
    hooks.receiver.answer((_request, index) => (index === 0 ? 'hang' : { status: 200 }));
    const { id, secret } = await hooks.subscribe(['task.created']);
    await hooks.api.call('POST', '/tasks', { json: { title: 'In flight when the worker dies' } });

    const child = spawn(process.execPath, ['test/webhooks/worker-child.ts'], {
      env: {
        PATH: process.env.PATH ?? '',
        CHILD_DATABASE_URL: database.connection?.url ?? '',
        CHILD_SEARCH_PATH: database.connection?.searchPath ?? '',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    await hooks.receiver.waitFor(1, 20_000);
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');

    // The dead worker's claim holds until its lease (5 minutes) runs out; then another worker takes it.
    await hooks.deliver();
    assert.equal(hooks.receiver.requests.length, 1, 'not while the lease holds');
    clock.set(new Date(Date.now() + 5 * MINUTE_MS + 1000));
    await hooks.deliver();

    const requests = hooks.receiver.requests;
    assert.equal(requests.length, 2, 'sent again once the lease ran out');
    const [first, second] = requests;
    assert.ok(first && second);
    assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
    assert.equal(second.body, first.body);
    verifyAt(t, secret, first);
    verifyAt(t, secret, second);
    const { data } = (await hooks.api.call('GET', `/hooks/${id}/deliveries`)).body;
    assert.deepEqual(
      data.map((d: { status: string; attempts: { number: number; status_code: number }[] }) => [
        d.status,
        d.attempts.map((a) => [a.number, a.status_code]),
      ]),
      [['succeeded', [[1, 200]]]],
      'one delivery, its one attempt recorded once',
    );
  });

  it('re-runs a job whose attempt was recorded before the worker died: nothing sent or recorded twice', async (t) => {
    const hooks = await startWebhookFixture(t);
    hooks.receiver.answer((_request, index) => (index === 0 ? { status: 500 } : { status: 200 }));
    const { id } = await hooks.subscribe(['task.created']);
    await hooks.api.call('POST', '/tasks', { json: { title: 'Recorded, then the worker died' } });
    await hooks.deliver();
    const db = hooks.api.runtime.database.db;
    const now = hooks.api.runtime.clock.now().getTime();
    // As if the worker died after committing the attempt but before marking its job done.
    await db
      .updateTable('jobs')
      .set({ status: 'running', locked_until: now - 1, locked_by: 'worker_dead' })
      .where('dedupe_key', 'like', 'webhook:%:1')
      .execute();
    await hooks.deliver();
    assert.equal(hooks.receiver.requests.length, 1, 'the re-run sends nothing');
    const followUps = await db
      .selectFrom('jobs')
      .select('status')
      .where('dedupe_key', 'like', 'webhook:%:2')
      .execute();
    assert.deepEqual(
      followUps.map((job) => job.status),
      ['queued'],
      'one job for the next attempt',
    );

    hooks.api.runtime.clock.advance(60_000);
    await hooks.deliver();
    const [delivery] = (await hooks.api.call('GET', `/hooks/${id}/deliveries`)).body.data;
    assert.deepEqual(
      delivery.attempts.map((a: { number: number; status_code: number }) => [a.number, a.status_code]),
      [
        [1, 500],
        [2, 200],
      ],
      'every attempt recorded once, none skipped',
    );
  });
});
