// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApiKey, revokeApiKey, rotateApiKey } from '../../src/api-keys/index.ts';
import { type AuditEvent, listAuditEvents, OPERATOR_SOURCE, userActor } from '../../src/audit/index.ts';
import type { Db } from '../../src/db/schema.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import {
  createSubscription,
  deleteSubscription,
  rotateSecret,
  updateSubscription,
  type WebhookDeps,
} from '../../src/webhooks/index.ts';
import {
  endElapsedTerms,
  lockWorkspace,
  provisionWorkspace,
  resendInvitation,
} from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture, type WebClient, webClient } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const BROWSER = { 'user-agent': 'Mozilla/5.0 (audit test)' };
const SOURCE = { actor: { label: 'Tester' }, ip: '198.51.100.4', userAgent: 'test-agent/1' };

async function eventsOf(db: Db, workspaceId: string): Promise<AuditEvent[]> {
  return (await listAuditEvents(db, workspaceId, {}, { limit: 200 })).items;
}

async function accountLevelEvents(db: Db) {
  return db.selectFrom('audit_events').selectAll().where('workspace_id', 'is', null).execute();
}

async function signIn(client: WebClient, email: string, password: string) {
  await client.get('/sign-in');
  return client.post('/sign-in', { email, password }, BROWSER);
}

/** Runs `change` in a transaction that then fails: neither the change nor its event may remain. */
async function rolledBack(db: Db, change: (trx: Db) => Promise<unknown>): Promise<void> {
  await assert.rejects(
    inTransaction(db, async (trx) => {
      await change(trx);
      throw new Error('rolled back');
    }),
    /rolled back/,
  );
}

describe(`the audit log records each change with who, what and where, on ${testDialect}`, () => {
  it('records sign-ins in every workspace of the account, failed sign-ins and sign-outs', async (t) => {
    const fixture = await startAppFixture(t);
    const db = fixture.runtime.database.db;
    const first = await fixture.provision({ email: 'ada@example.com', name: 'First' });
    const owner = await acceptAsNewAccount(fixture.runtime.app, first.invitationPath, PASSWORD);
    const second = await fixture.provision({ email: 'ada@example.com', name: 'Second' });
    await owner.get(second.invitationPath);
    assert.equal((await owner.post(`${second.invitationPath}/accept`, {})).status, 303);
    const user = await db.selectFrom('users').select(['id', 'email']).executeTakeFirstOrThrow();
    await db.deleteFrom('audit_events').execute();

    const client = webClient(fixture.runtime.app);
    assert.equal((await signIn(client, 'ada@example.com', 'not the password')).status, 401);
    assert.equal((await signIn(client, 'nobody@example.com', 'not the password')).status, 401);
    assert.equal((await signIn(client, 'ada@example.com', PASSWORD)).status, 303);
    await client.get('/workspaces');
    assert.equal((await client.post('/sign-out', {}, BROWSER)).status, 303);

    for (const workspaceId of [first.workspaceId, second.workspaceId]) {
      const events = await eventsOf(db, workspaceId);
      assert.deepEqual(
        events.map((event) => [event.action, event.actor.label, event.actor.user_id, event.target?.id]),
        [
          ['account.signed_out', 'ada@example.com', user.id, user.id],
          ['account.signed_in', 'ada@example.com', user.id, user.id],
          ['account.sign_in_failed', 'Unknown', null, user.id],
        ],
        `the events of ${workspaceId}, newest first`,
      );
      for (const event of events) {
        assert.equal(event.ip, '127.0.0.1');
        assert.equal(event.user_agent, BROWSER['user-agent']);
        assert.deepEqual(event.target, { type: 'user', id: user.id, label: 'ada@example.com' });
      }
    }
    const unknown = await accountLevelEvents(db);
    assert.equal(unknown.length, 1, 'an address without an account: one account-level event');
    assert.equal(unknown[0]?.action, 'account.sign_in_failed');
    assert.equal(unknown[0]?.target_id, null, 'the address someone typed is not kept');
    assert.ok(!JSON.stringify(unknown).includes('nobody@example.com'));
  });

  it('records invitations accepted and sent again, by whom; a rolled-back resend records nothing', async (t) => {
    const fixture = await startAppFixture(t);
    const db = fixture.runtime.database.db;
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
    const user = await db.selectFrom('users').select(['id', 'email']).executeTakeFirstOrThrow();
    const accepted = (await eventsOf(db, workspaceId)).find((e) => e.action === 'invitation.accepted');
    assert.equal(accepted?.actor.user_id, user.id);
    assert.equal(accepted?.target?.type, 'invitation');
    assert.equal(accepted?.target?.label, 'ada@example.com (owner)');

    const late = await fixture.provision({ email: 'late@example.com' });
    fixture.runtime.clock.advance(7 * DAY_MS);
    const visitor = webClient(fixture.runtime.app);
    await visitor.get(late.invitationPath);
    assert.equal((await visitor.post(`${late.invitationPath}/resend`, {}, BROWSER)).status, 200);
    const resent = (await eventsOf(db, late.workspaceId)).filter((e) => e.action === 'invitation.resent');
    assert.equal(resent.length, 1);
    assert.equal(resent[0]?.actor.label, 'Holder of an invitation link');
    assert.equal(resent[0]?.user_agent, BROWSER['user-agent']);

    const token = late.invitationPath.split('/').at(-1) ?? '';
    const before = (await eventsOf(db, late.workspaceId)).length;
    await rolledBack(db, (trx) =>
      resendInvitation(trx, { clock: fixture.runtime.clock, baseUrl: 'http://svc.test' }, token, SOURCE),
    );
    assert.equal((await eventsOf(db, late.workspaceId)).length, before);
  });

  it('records API keys created, rotated and revoked by the app and by operators, in the change’s transaction', async (t) => {
    const fixture = await startAppFixture(t);
    const db = fixture.runtime.database.db;
    const clock = fixture.runtime.clock;
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com' });
    const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
    const user = await db.selectFrom('users').select(['id', 'email']).executeTakeFirstOrThrow();
    await db.deleteFrom('audit_events').execute();

    await owner.get(`/w/${workspaceId}/integrations`);
    assert.equal(
      (await owner.post(`/w/${workspaceId}/integrations/keys`, { name: 'Agent' }, BROWSER)).status,
      201,
    );
    const key = await db.selectFrom('api_keys').select('id').executeTakeFirstOrThrow();
    await owner.post(`/w/${workspaceId}/integrations/keys/${key.id}/revoke`, {}, BROWSER);
    await owner.post(`/w/${workspaceId}/integrations/keys/${key.id}/revoke`, {}, BROWSER);

    const created = await createApiKey(db, clock, { workspaceId, name: 'Deploy' }, OPERATOR_SOURCE);
    assert.ok(created.ok);
    const cli = created.value;
    const rotated = await rotateApiKey(
      db,
      clock,
      cli.info.id,
      OPERATOR_SOURCE,
      new Date(clock.now().getTime() + DAY_MS),
    );
    assert.ok(rotated.ok);

    const events = await eventsOf(db, workspaceId);
    assert.deepEqual(
      events.map((e) => [e.action, e.actor.label, e.target?.id, e.target?.label, e.ip]),
      [
        ['api_key.rotated', 'Operator (CLI)', cli.info.id, 'Deploy', null],
        ['api_key.created', 'Operator (CLI)', cli.info.id, 'Deploy', null],
        ['api_key.revoked', 'ada@example.com', key.id, 'Agent', '127.0.0.1'],
        ['api_key.created', 'ada@example.com', key.id, 'Agent', '127.0.0.1'],
      ],
      'a second revoke changes nothing and records nothing',
    );
    assert.equal(events.at(-1)?.actor.user_id, user.id);

    await rolledBack(db, (trx) => createApiKey(trx, clock, { workspaceId, name: 'Gone' }, SOURCE));
    await rolledBack(db, (trx) => revokeApiKey(trx, clock, cli.info.id, SOURCE));
    await rolledBack(db, (trx) => rotateApiKey(trx, clock, rotated.value.info.id, SOURCE));
    assert.equal((await eventsOf(db, workspaceId)).length, events.length, 'rolled back: no event');
    assert.equal(
      (await db.selectFrom('api_keys').select('id').where('name', '=', 'Gone').execute()).length,
      0,
    );
  });

  it('records webhook subscriptions created, changed, paused, resumed, rotated and deleted; nothing when rolled back', async (t) => {
    const fixture = await startAppFixture(t, { env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
    const db = fixture.runtime.database.db;
    const hooks: WebhookDeps = {
      db,
      clock: fixture.runtime.clock,
      targets: { allowLoopback: true, resolveHost: async () => ['127.0.0.1'] },
      lockWorkspace,
    };
    const { workspaceId } = await fixture.provision({ email: 'ada@example.com' });
    await db.deleteFrom('audit_events').execute();
    const url = 'http://127.0.0.1:9/hooks?token=secret';
    const created = await createSubscription(hooks, workspaceId, { url, event_types: ['*'] }, SOURCE);
    assert.ok(created.ok);
    const id = created.value.id;
    await updateSubscription(hooks, workspaceId, id, { description: 'CI' }, SOURCE);
    await updateSubscription(hooks, workspaceId, id, { status: 'disabled' }, SOURCE);
    await updateSubscription(hooks, workspaceId, id, { status: 'disabled' }, SOURCE);
    await updateSubscription(hooks, workspaceId, id, { status: 'enabled' }, SOURCE);
    await rotateSecret(hooks, workspaceId, id, {}, SOURCE);
    await rolledBack(db, (trx) => deleteSubscription({ ...hooks, db: trx }, workspaceId, id, SOURCE));
    await rolledBack(db, (trx) =>
      createSubscription({ ...hooks, db: trx }, workspaceId, { url, event_types: ['*'] }, SOURCE),
    );
    await deleteSubscription(hooks, workspaceId, id, SOURCE);

    const events = await eventsOf(db, workspaceId);
    assert.deepEqual(
      events.map((e) => e.action),
      [
        'webhook.deleted',
        'webhook.secret_rotated',
        'webhook.resumed',
        'webhook.paused',
        'webhook.updated',
        'webhook.created',
      ],
    );
    for (const event of events) {
      assert.deepEqual(event.target, { type: 'webhook_subscription', id, label: '127.0.0.1:9' });
      assert.deepEqual(
        [event.actor.label, event.ip, event.user_agent],
        ['Tester', '198.51.100.4', 'test-agent/1'],
      );
    }
    assert.ok(!JSON.stringify(events).includes('token=secret'), 'a URL’s query (often a token) is not kept');
  });

  it('records a purchase by the agent’s checkout and the move to Free at the term’s end by the system', async (t) => {
    const fixture = await startAppFixture(t);
    const { db } = fixture.runtime.database;
    const clock = fixture.runtime.clock;
    const buy = (trx: Db, orderId: string) =>
      provisionWorkspace(
        trx as Parameters<typeof provisionWorkspace>[0],
        {
          name: 'Acme',
          plan: 'pro',
          ownerEmail: 'ada@example.com',
          term: { term: 'month', startsAt: clock.now(), channel: 'mpp', orderId },
        },
        { clock, baseUrl: 'http://svc.test' },
      );
    await rolledBack(db, (trx) => buy(trx, 'ord_gone'));
    assert.equal((await db.selectFrom('audit_events').selectAll().execute()).length, 0);
    const { workspace } = await inTransaction(db, (trx) => buy(trx, 'ord_1'));
    clock.advance(40 * DAY_MS);
    await endElapsedTerms(db, { clock, baseUrl: 'http://svc.test' });
    await endElapsedTerms(db, { clock, baseUrl: 'http://svc.test' });

    const events = await eventsOf(db, workspace.id);
    assert.deepEqual(
      events.map((e) => [e.action, e.actor.label, e.actor.user_id, e.target]),
      [
        [
          'plan.changed',
          'System',
          null,
          { type: 'order', id: 'ord_1', label: 'Pro to Free: the term ended' },
        ],
        [
          'plan.purchased',
          'Agent checkout (MPP)',
          null,
          { type: 'order', id: 'ord_1', label: 'Pro, one month' },
        ],
      ],
    );
  });

  it('keeps what it stores bounded and storable', async (t) => {
    const fixture = await startAppFixture(t);
    const db = fixture.runtime.database.db;
    const { workspaceId } = await fixture.provision({ email: 'ada@example.com' });
    await createApiKey(
      db,
      fixture.runtime.clock,
      { workspaceId, name: 'k' },
      {
        actor: userActor({ id: 'user_x', email: `${'a'.repeat(500)}@example.com` }),
        userAgent: `x\u0000${'y'.repeat(1000)}\ud800`,
      },
    );
    const [event] = await eventsOf(db, workspaceId);
    assert.ok(event);
    assert.equal([...event.actor.label].length, 200);
    assert.equal([...(event.user_agent ?? '')].length, 256);
    assert.ok(!event.user_agent?.includes('\u0000'));
  });
});
