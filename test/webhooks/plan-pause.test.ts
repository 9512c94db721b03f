// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { PLAN_ENTITLEMENTS } from '../../src/catalog/index.ts';
import { inTransaction } from '../../src/db/transaction.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import { applyPlanToSubscriptions } from '../../src/webhooks/index.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { type AppFixture, acceptAsNewAccount, startAppFixture, type WebClient } from '../helpers/web.ts';
import { startReceiver, type TestReceiver } from './receiver.ts';

const PASSWORD = 'correct horse battery staple';
const OWNER = 'owner@example.com';
const FREE_LIMIT = PLAN_ENTITLEMENTS.free.webhookSubscriptions;

interface Setup {
  fixture: AppFixture;
  receiver: TestReceiver;
  workspaceId: string;
  owner: WebClient;
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies of every shape
  rest(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Subscription ids, oldest first; each posts to `<receiver>/hooks/<index>`. */
  hooks: string[];
}

/** A Pro workspace (one year) with a signed-in owner, an API key and five subscriptions made a second apart. */
async function proWorkspaceWithHooks(t: TestContext): Promise<Setup> {
  const fixture = await startAppFixture(t, { env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
  const apiUrl = await fixture.runtime.app.listen({ host: '127.0.0.1', port: 0 });
  const receiver = await startReceiver(t);
  const { workspaceId, invitationPath } = await fixture.provision({ email: OWNER, name: 'Acme' });
  const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  const key = await createApiKey(
    fixture.runtime.database.db,
    fixture.runtime.clock,
    { workspaceId, name: 'agent' },
    OPERATOR_SOURCE,
  );
  assert.ok(key.ok);
  const rest: Setup['rest'] = async (method, path, body) => {
    const response = await fetch(`${apiUrl}/api/v1${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key.value.key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text.startsWith('{') ? JSON.parse(text) : text };
  };
  const hooks: string[] = [];
  for (let n = 0; n < 5; n++) {
    fixture.runtime.clock.advance(1000);
    const made = await rest('POST', '/hooks', { url: `${receiver.url}/hooks/${n}`, event_types: ['*'] });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    hooks.push(made.body.id);
  }
  return { fixture, receiver, workspaceId, owner, rest, hooks };
}

/** The term ends under the moved clock and the sweep moves the workspace to Free; the owner signs in again. */
async function endTerm(setup: Setup) {
  const { runtime } = setup.fixture;
  runtime.clock.advance(400 * DAY_MS);
  const ended = await endElapsedTerms(runtime.database.db, {
    clock: runtime.clock,
    baseUrl: runtime.config.baseUrl,
  });
  await setup.owner.get('/sign-in');
  const signedIn = await setup.owner.post('/sign-in', { email: OWNER, password: PASSWORD });
  assert.equal(signedIn.status, 303);
  return ended;
}

async function statuses(setup: Setup) {
  const listed = await setup.rest('GET', '/hooks');
  assert.equal(listed.status, 200);
  return Object.fromEntries(
    listed.body.data.map((hook: { id: string; status: string; disabled_reason: string | null }) => [
      setup.hooks.indexOf(hook.id),
      hook.disabled_reason ?? hook.status,
    ]),
  );
}

/** Which subscriptions (by index) received the event of type `type` whose data has `title`. */
function receivedBy(receiver: TestReceiver, title: string): number[] {
  return receiver.requests
    .filter((request) => JSON.parse(request.body).data.title === title)
    .map((request) => Number(request.path.split('/').at(-1)))
    .sort();
}

describe(`subscriptions over the plan's limit on ${testDialect}`, () => {
  it('pauses all but the oldest at the move to Free, delivers nothing to them, and resumes exactly those under a paid plan', async (t) => {
    const setup = await proWorkspaceWithHooks(t);
    const { fixture, receiver, hooks } = setup;
    const { db } = fixture.runtime.database;
    assert.equal(FREE_LIMIT, 1, 'the test reads Free as allowing one subscription');
    assert.equal((await setup.rest('PATCH', `/hooks/${hooks[2]}`, { status: 'disabled' })).status, 200);

    const [ended] = await endTerm(setup);
    assert.equal(ended?.planNow, 'free');
    assert.deepEqual(ended?.subscriptionsPaused, [hooks[1], hooks[3], hooks[4]]);
    assert.deepEqual(await statuses(setup), {
      0: 'enabled',
      1: 'plan_limit',
      2: 'user',
      3: 'plan_limit',
      4: 'plan_limit',
    });
    const paused = await db
      .selectFrom('audit_events')
      .select(['actor_label', 'target_id'])
      .where('workspace_id', '=', setup.workspaceId)
      .where('action', '=', 'webhook.paused')
      .where('actor_label', '=', 'System')
      .execute();
    assert.deepEqual(paused.map((row) => row.target_id).sort(), [hooks[1], hooks[3], hooks[4]].sort());

    const resume = await setup.rest('PATCH', `/hooks/${hooks[3]}`, { status: 'enabled' });
    assert.equal(resume.status, 403, 'Free delivers to one subscription only');
    assert.equal(resume.body.code, 'plan_limit_reached');

    await setup.rest('POST', '/tasks', { title: 'While on Free' });
    await fixture.runtime.jobs.drain();
    assert.deepEqual(receivedBy(receiver, 'While on Free'), [0], 'only the subscription kept delivers');
    const cancelled = await db
      .selectFrom('webhook_deliveries')
      .select(['subscription_id', 'status'])
      .where('subscription_id', 'in', [hooks[1], hooks[3], hooks[4]] as string[])
      .where('status', '=', 'pending')
      .execute();
    assert.deepEqual(cancelled, [], 'nothing waits to be sent to a paused subscription');

    const applied = await inTransaction(db, async (trx) => {
      await trx.updateTable('workspaces').set({ plan: 'pro' }).where('id', '=', setup.workspaceId).execute();
      return applyPlanToSubscriptions(trx, {
        workspaceId: setup.workspaceId,
        plan: 'pro',
        clock: fixture.runtime.clock,
      });
    });
    assert.deepEqual(applied, { paused: [], resumed: [hooks[1], hooks[3], hooks[4]] });
    assert.deepEqual(await statuses(setup), {
      0: 'enabled',
      1: 'enabled',
      2: 'user',
      3: 'enabled',
      4: 'enabled',
    });
    await setup.rest('POST', '/tasks', { title: 'On Pro again' });
    await fixture.runtime.jobs.drain();
    assert.deepEqual(receivedBy(receiver, 'On Pro again'), [0, 1, 3, 4]);
    assert.deepEqual(
      receivedBy(receiver, 'While on Free'),
      [0],
      'what happened while paused is not sent later',
    );
  });

  it('resumes only as many as the new plan allows, oldest first, and changes nothing when applied again', async (t) => {
    const setup = await proWorkspaceWithHooks(t);
    const { db } = setup.fixture.runtime.database;
    const clock = setup.fixture.runtime.clock;
    await endTerm(setup);
    const apply = (plan: 'free' | 'starter') =>
      inTransaction(db, (trx) =>
        applyPlanToSubscriptions(trx, { workspaceId: setup.workspaceId, plan, clock }),
      );
    assert.deepEqual(await apply('free'), { paused: [], resumed: [] });
    assert.equal((await setup.rest('DELETE', `/hooks/${setup.hooks[0]}`)).status, 204);
    assert.deepEqual(
      await apply('free'),
      { paused: [], resumed: [setup.hooks[1]] },
      'a freed slot goes to the oldest paused',
    );
    assert.equal((await setup.rest('PATCH', `/hooks/${setup.hooks[1]}`, { status: 'disabled' })).status, 200);
    assert.deepEqual(await apply('starter'), {
      paused: [],
      resumed: [setup.hooks[2], setup.hooks[3], setup.hooks[4]],
    });
    assert.deepEqual(await statuses(setup), { 1: 'user', 2: 'enabled', 3: 'enabled', 4: 'enabled' });
  });

  it('shows the reason on the app pages with the way to Billing, and refuses resuming in the app', async (t) => {
    const setup = await proWorkspaceWithHooks(t);
    await endTerm(setup);
    const base = `/w/${setup.workspaceId}/integrations/webhooks`;
    const billing = `href="/w/${setup.workspaceId}/billing"`;
    const notice = `Paused: over the Free plan&#39;s limit of ${FREE_LIMIT}`;
    const list = await setup.owner.get(base);
    assert.equal(list.status, 200);
    assert.equal(list.body.split(notice).length - 1, 4, 'four of five are paused over the limit');
    assert.ok(list.body.includes(`; <a ${billing}>upgrade in Billing</a>`));
    const detail = await setup.owner.get(`${base}/${setup.hooks[4]}`);
    assert.ok(detail.body.includes(notice));
    assert.ok(detail.body.includes(billing));
    const kept = await setup.owner.get(`${base}/${setup.hooks[0]}`);
    assert.ok(!kept.body.includes(notice));

    const refused = await setup.owner.post(`${base}/${setup.hooks[4]}/resume`, {});
    assert.equal(refused.status, 403);
    assert.match(refused.body, /<meta name="error-code" content="plan_limit_reached">/);
    assert.ok(refused.body.includes(`/w/${setup.workspaceId}/billing`));
  });
});
