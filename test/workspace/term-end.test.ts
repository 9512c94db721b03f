// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inTransaction, isUniqueViolation } from '../../src/db/transaction.ts';
import { createRuntime } from '../../src/runtime.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import { getWorkspace, provisionWorkspace } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.ts';

async function buyProMonth(runtime: TestRuntime, orderId = 'ord_1') {
  return inTransaction(runtime.database.db, (trx) =>
    provisionWorkspace(
      trx,
      {
        name: 'Acme',
        plan: 'pro',
        ownerEmail: 'owner@example.com',
        term: { term: 'month', startsAt: runtime.clock.now(), channel: 'mpp', orderId },
      },
      { clock: runtime.clock, baseUrl: runtime.config.baseUrl },
    ),
  );
}

describe(`workspace terms on ${testDialect}`, () => {
  it('creates a workspace with one non-renewing term, an owner invitation and its email', async (t) => {
    const runtime = await startTestRuntime(t);
    const { workspace } = await buyProMonth(runtime);
    assert.equal(workspace.plan, 'pro');
    assert.deepEqual(workspace.currentTerm, {
      plan: 'pro',
      term: 'month',
      startsAt: new Date('2026-03-01T12:00:00.000Z'),
      endsAt: new Date('2026-04-01T12:00:00.000Z'),
      channel: 'mpp',
      orderId: 'ord_1',
      renews: false,
    });
    const invitation = await runtime.database.db
      .selectFrom('workspace_invitations')
      .selectAll()
      .executeTakeFirstOrThrow();
    assert.equal(invitation.email, 'owner@example.com');
    assert.equal(invitation.role, 'owner');
    assert.equal(invitation.expires_at - runtime.clock.now().getTime(), 7 * DAY_MS);
    assert.match(invitation.token_hash, /^[0-9a-f]{64}$/);

    await runtime.jobs.drain();
    const [mail] = (await runtime.app.inject({ method: 'GET', url: '/dev/mailbox.json' })).json().data;
    const token = /\/invitations\/(inv_[A-Za-z0-9_-]+)/.exec(mail.text)?.[1];
    assert.ok(token, 'the email carries the accept link');
    assert.notEqual(invitation.token_hash, token, 'only the hash is stored');
  });

  it('makes one workspace per order: asked again for the same order it fails and writes nothing', async (t) => {
    const runtime = await startTestRuntime(t);
    await buyProMonth(runtime);
    await assert.rejects(buyProMonth(runtime), (error) => isUniqueViolation(error));
    assert.equal((await runtime.database.db.selectFrom('workspaces').selectAll().execute()).length, 1);
    assert.equal((await runtime.database.db.selectFrom('mail_messages').selectAll().execute()).length, 1);
  });

  it('moves the workspace to Free when its term ends, not before', async (t) => {
    const runtime = await startTestRuntime(t);
    const { workspace } = await buyProMonth(runtime);
    runtime.clock.set('2026-04-01T11:59:59.999Z');
    await runtime.jobs.runSweeps();
    assert.equal((await getWorkspace(runtime.database.db, workspace.id))?.plan, 'pro');
    runtime.clock.set('2026-04-01T12:00:00.000Z');
    await runtime.jobs.runSweeps();
    const after = await getWorkspace(runtime.database.db, workspace.id);
    assert.equal(after?.plan, 'free');
    assert.equal(after?.currentTerm, null);
  });

  it('catches up on terms that ended while the service was down', async (t) => {
    const runtime = await startTestRuntime(t);
    const { workspace } = await buyProMonth(runtime);
    const other = await buyProMonth(runtime, 'ord_2');
    runtime.jobs.start();
    await runtime.jobs.stop();

    // Down from before the term end until well after it; a new instance starts on the same data.
    runtime.clock.set('2026-05-20T00:00:00.000Z');
    const restarted = await createRuntime(runtime.config, {
      clock: runtime.clock,
      database: runtime.database,
    });
    t.after(() => restarted.close());
    restarted.jobs.start();
    const deadline = Date.now() + 5000;
    while ((await getWorkspace(runtime.database.db, workspace.id))?.plan !== 'free') {
      assert.ok(Date.now() < deadline, 'the sweep runs at start');
      await new Promise((r) => setTimeout(r, 10));
    }
    await restarted.jobs.stop();
    assert.equal((await getWorkspace(runtime.database.db, other.workspace.id))?.plan, 'free');
  });

  it('keeps the free plan for an operator-made Free workspace (no term)', async (t) => {
    const runtime = await startTestRuntime(t);
    const { workspace } = await inTransaction(runtime.database.db, (trx) =>
      provisionWorkspace(
        trx,
        { name: 'Free one', plan: 'free', ownerEmail: 'f@example.com' },
        {
          clock: runtime.clock,
          baseUrl: runtime.config.baseUrl,
        },
      ),
    );
    assert.equal(workspace.currentTerm, null);
    runtime.clock.advance(400 * DAY_MS);
    await runtime.jobs.runSweeps();
    assert.equal((await getWorkspace(runtime.database.db, workspace.id))?.plan, 'free');
  });
});
