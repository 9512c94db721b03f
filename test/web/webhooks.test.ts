// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createUser, hashPassword } from '../../src/accounts/index.ts';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { PLAN_ENTITLEMENTS } from '../../src/catalog/index.ts';
import { newId } from '../../src/shared/ids.ts';
import { createSubscription, getSubscription, type WebhookDeps } from '../../src/webhooks/index.ts';
import { lockWorkspace } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import {
  type AppFixture,
  acceptAsNewAccount,
  startAppFixture,
  type WebClient,
  webClient,
} from '../helpers/web.ts';
import { verifyAt } from '../webhooks/fixture.ts';
import { startReceiver, type TestReceiver } from '../webhooks/receiver.ts';

const PASSWORD = 'correct horse battery staple';

interface Owner {
  fixture: AppFixture;
  receiver: TestReceiver;
  workspaceId: string;
  client: WebClient;
  /** `/w/{id}/integrations/webhooks` */
  page: string;
  /** An API key of the workspace, for triggering events through the REST API. */
  apiKey: string;
}

/** A signed-in owner on the webhooks page, with loopback targets allowed and a receiver listening. */
async function ownerOnWebhooksPage(t: TestContext): Promise<Owner> {
  const fixture = await startAppFixture(t, { env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
  const receiver = await startReceiver(t);
  const { workspaceId, invitationPath } = await fixture.provision({
    email: 'owner@example.com',
    name: 'Acme',
  });
  const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  const page = `/w/${workspaceId}/integrations/webhooks`;
  assert.equal((await client.get(page)).status, 200);
  const created = await createApiKey(
    fixture.runtime.database.db,
    fixture.runtime.clock,
    {
      workspaceId,
      name: 'events',
    },
    OPERATOR_SOURCE,
  );
  assert.ok(created.ok);
  const { key } = created.value;
  return { fixture, receiver, workspaceId, client, page, apiKey: key };
}

function hooksOf(fixture: AppFixture): WebhookDeps {
  const { runtime } = fixture;
  return {
    db: runtime.database.db,
    clock: runtime.clock,
    targets: { allowLoopback: true, resolveHost: async () => [] },
    lockWorkspace,
  };
}

async function callApi(owner: Owner, method: 'GET' | 'POST', url: string, json?: unknown) {
  const response = await owner.fixture.runtime.app.inject({
    method,
    url: `/api/v1${url}`,
    headers: {
      authorization: `Bearer ${owner.apiKey}`,
      ...(json === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(json === undefined ? {} : { payload: JSON.stringify(json) }),
  });
  return { status: response.statusCode, body: response.json() };
}

/** An event for the subscriptions: a task created through the REST API. */
async function createTask(owner: Owner, title = 'Write the access control policy'): Promise<void> {
  assert.equal((await callApi(owner, 'POST', '/tasks', { title })).status, 201);
}

async function subscriptionIds(owner: Owner): Promise<string[]> {
  const rows = await owner.fixture.runtime.database.db
    .selectFrom('webhook_subscriptions')
    .select('id')
    .where('workspace_id', '=', owner.workspaceId)
    .orderBy('id')
    .execute();
  return rows.map((row) => row.id);
}

/** Subscribes the receiver through the form; answers the new subscription's id and secret. */
async function subscribe(owner: Owner, eventTypes: string[] = ['task.created']) {
  const created = await owner.client.post(owner.page, {
    url: `${owner.receiver.url}/hooks`,
    event_types: eventTypes,
  });
  assert.equal(created.status, 201, created.body);
  const secret = secretIn(created.body);
  assert.ok(secret, 'the secret is on the page');
  const id = (await subscriptionIds(owner)).at(-1);
  assert.ok(id);
  return { id, secret, page: `${owner.page}/${id}` };
}

function secretIn(html: string): string | undefined {
  return /id="new-secret-value">(whsec_[^<]+)</.exec(html)?.[1];
}

const unescapeHtml = (text: string) =>
  text
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&amp;', '&');

/** The messages of the page's error summary, as text. */
function formErrors(html: string): string[] {
  const summary = /<div class="error-summary"[\s\S]*?<\/ul>/.exec(html)?.[0] ?? '';
  return [...summary.matchAll(/<li>(?:<a href="#[^"]*">)?([^<]*)/g)].map((match) =>
    unescapeHtml(match[1] ?? ''),
  );
}

/** The rows of the deliveries table, as text without tags. */
function deliveryRows(html: string): string[] {
  const table = /<section aria-labelledby="deliveries-title"[\s\S]*?<\/section>/.exec(html)?.[0] ?? '';
  return [...table.matchAll(/<tr role="row">([\s\S]*?)<\/tr>/g)].slice(1).map((row) =>
    unescapeHtml(
      (row[1] ?? '')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    ),
  );
}

describe(`webhook subscriptions in the app on ${testDialect}`, () => {
  it('creates a subscription from the form, shows its secret once and lists it', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const created = await owner.client.post(owner.page, {
      url: `${owner.receiver.url}/hooks`,
      description: 'Compliance agent inbox',
      event_types: ['task.created', 'task.completed'],
    });
    assert.equal(created.status, 201);
    const secret = secretIn(created.body);
    assert.match(secret ?? '', /^whsec_/);
    assert.match(created.body, /Copy secret/);

    const [id] = await subscriptionIds(owner);
    assert.ok(id);
    const stored = await getSubscription(hooksOf(owner.fixture), owner.workspaceId, id);
    assert.equal(stored?.url, `${owner.receiver.url}/hooks`);
    assert.deepEqual(stored?.event_types, ['task.created', 'task.completed']);
    assert.equal(stored?.description, 'Compliance agent inbox');

    const list = await owner.client.get(owner.page);
    assert.equal(list.status, 200);
    assert.ok(!list.body.includes(secret ?? 'no secret'), 'the secret is shown only once');
    assert.match(list.body, new RegExp(`href="${owner.page}/${id}">${owner.receiver.url}/hooks</a>`));
    assert.match(list.body, /task\.created, task\.completed/);
    assert.match(list.body, /data-label="Status">Active</);
    assert.match(list.body, /<time datetime="2026-03-01T12:00:00.000Z">/);
    const detail = await owner.client.get(`${owner.page}/${id}`);
    assert.equal(detail.status, 200);
    assert.ok(!detail.body.includes(secret ?? 'no secret'));
  });

  it("refuses a URL the target policy refuses, in the REST API's own words, and stores nothing", async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    for (const [url, code] of [
      ['https://10.0.0.1/hooks', 'target_not_public'],
      ['https://[::ffff:169.254.169.254]/latest', 'target_not_public'],
      ['https://user:secret@93.184.216.34/hooks', 'url_has_credentials'],
    ] as const) {
      const answer = await owner.client.post(owner.page, { url, event_types: ['*'] });
      assert.equal(answer.status, 400, url);
      assert.match(answer.body, new RegExp(`<meta name="error-code" content="${code}">`));
      const api = await callApi(owner, 'POST', '/hooks', { url, event_types: ['*'] });
      assert.equal(api.status, 400);
      assert.equal(api.body.code, code);
      assert.deepEqual(formErrors(answer.body), [api.body.detail], url);
      assert.match(answer.body, /<a href="#url">/, 'the error leads to the field');
      assert.ok(answer.body.includes(`value="${url.replaceAll('&', '&amp;')}"`), 'the form keeps the URL');
    }
    assert.deepEqual(await subscriptionIds(owner), []);
  });

  it('checks the rest of the form with the REST API schema, and the limit of subscriptions', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const url = `${owner.receiver.url}/hooks`;
    const noEvents = await owner.client.post(owner.page, { url });
    assert.equal(noEvents.status, 400);
    assert.deepEqual(formErrors(noEvents.body), ['Choose at least one event type, or all events.']);
    const unknownEvent = await owner.client.post(owner.page, {
      url,
      event_types: ['task.created', 'task.exploded'],
    });
    assert.equal(unknownEvent.status, 400);
    const longDescription = await owner.client.post(owner.page, {
      url,
      description: 'x'.repeat(501),
      event_types: ['*'],
    });
    assert.deepEqual(formErrors(longDescription.body), ['Keep the description to 500 characters of text.']);
    const notUrl = await owner.client.post(owner.page, { url: 'hooks.example.com', event_types: ['*'] });
    assert.equal(notUrl.status, 400);
    assert.deepEqual(await subscriptionIds(owner), []);

    const { webhookSubscriptions: limit } = PLAN_ENTITLEMENTS.pro;
    for (let n = 0; n < limit; n++) {
      const made = await createSubscription(
        hooksOf(owner.fixture),
        owner.workspaceId,
        {
          url: `${url}/${n}`,
          event_types: ['*'],
        },
        OPERATOR_SOURCE,
      );
      assert.ok(made.ok);
    }
    const overLimit = await owner.client.post(owner.page, { url, event_types: ['*'] });
    assert.equal(overLimit.status, 403);
    assert.match(overLimit.body, /<meta name="error-code" content="plan_limit_reached">/);
    assert.deepEqual(formErrors(overLimit.body), [
      `The Pro plan allows ${limit} webhook subscriptions; this would go over it. Remove something first, ` +
        `or choose a larger plan at ${owner.fixture.baseUrl}/w/${owner.workspaceId}/billing.`,
    ]);
    assert.equal((await subscriptionIds(owner)).length, limit);
  });

  it('changes the event types, pauses (nothing is sent) and resumes', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const hook = await subscribe(owner, ['risk.created']);
    const hooks = hooksOf(owner.fixture);

    const changed = await owner.client.post(`${hook.page}/event-types`, {
      event_types: ['task.created', 'task.deleted'],
    });
    assert.equal(changed.status, 303);
    assert.equal(changed.location, hook.page);
    assert.deepEqual((await getSubscription(hooks, owner.workspaceId, hook.id))?.event_types, [
      'task.created',
      'task.deleted',
    ]);
    const detail = await owner.client.get(hook.page);
    assert.match(detail.body, /<dt>Events<\/dt><dd>task\.created, task\.deleted<\/dd>/);
    assert.match(detail.body, /id="event-task.created" name="event_types" value="task.created" checked/);

    const none = await owner.client.post(`${hook.page}/event-types`, {});
    assert.equal(none.status, 400);
    assert.deepEqual(formErrors(none.body), ['Choose at least one event type, or all events.']);
    const all = await owner.client.post(`${hook.page}/event-types`, { event_types: ['*', 'task.created'] });
    assert.equal(all.status, 303);
    assert.deepEqual((await getSubscription(hooks, owner.workspaceId, hook.id))?.event_types, ['*']);

    assert.equal((await owner.client.post(`${hook.page}/pause`, {})).status, 303);
    assert.equal((await getSubscription(hooks, owner.workspaceId, hook.id))?.status, 'disabled');
    assert.match((await owner.client.get(hook.page)).body, /<dt>Status<\/dt><dd>Paused<\/dd>[\s\S]*>Resume</);
    await createTask(owner);
    await owner.fixture.runtime.jobs.drain();
    assert.equal(owner.receiver.requests.length, 0, 'a paused subscription receives nothing');

    assert.equal((await owner.client.post(`${hook.page}/resume`, {})).status, 303);
    assert.equal((await getSubscription(hooks, owner.workspaceId, hook.id))?.status, 'enabled');
    await createTask(owner);
    await owner.fixture.runtime.jobs.drain();
    assert.equal(owner.receiver.requests.length, 1);
  });

  it('rotates the secret: the new one is shown once, the old one keeps signing for the grace chosen', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const hook = await subscribe(owner);
    const hooks = hooksOf(owner.fixture);

    const refused = await owner.client.post(`${hook.page}/rotate-secret`, { grace: '30d' });
    assert.equal(refused.status, 400);
    assert.deepEqual(formErrors(refused.body), ['Choose how long the old secret keeps signing.']);

    const rotated = await owner.client.post(`${hook.page}/rotate-secret`, { grace: '1h' });
    assert.equal(rotated.status, 200);
    const secret = secretIn(rotated.body);
    assert.ok(secret && secret !== hook.secret);
    const graceEnds = '2026-03-01T13:00:00.000Z';
    assert.equal(
      (await getSubscription(hooks, owner.workspaceId, hook.id))?.previous_secret_expires_at,
      graceEnds,
    );
    assert.match(rotated.body, new RegExp(`Also signs until <time datetime="${graceEnds}">`));
    assert.ok(!(await owner.client.get(hook.page)).body.includes(secret), 'shown once');

    await createTask(owner);
    await owner.fixture.runtime.jobs.drain();
    const [request] = await owner.receiver.waitFor(1);
    assert.ok(request);
    assert.ok(verifyAt(t, secret, request), 'signed with the new secret');
    assert.ok(verifyAt(t, hook.secret, request), 'and with the old one during the grace period');

    const immediate = await owner.client.post(`${hook.page}/rotate-secret`, { grace: 'now' });
    const newest = secretIn(immediate.body);
    assert.ok(newest);
    assert.equal(
      (await getSubscription(hooks, owner.workspaceId, hook.id))?.previous_secret_expires_at,
      null,
    );
    await createTask(owner);
    await owner.fixture.runtime.jobs.drain();
    const second = (await owner.receiver.waitFor(2))[1];
    assert.ok(second);
    assert.ok(verifyAt(t, newest, second));
    assert.throws(() => verifyAt(t, secret, second), 'the replaced secret no longer signs');
  });

  it('lists recent deliveries with status, attempts and response code, and redelivers one', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    owner.receiver.answer((_request, index) =>
      index === 0 ? { status: 503, body: 'busy' } : { status: 204 },
    );
    const hook = await subscribe(owner);
    await createTask(owner);
    await owner.fixture.runtime.jobs.drain();

    const failing = await owner.client.get(hook.page);
    const [pending] = deliveryRows(failing.body);
    assert.match(
      pending ?? '',
      /^task\.created evt_\w+ Pending next attempt .+ UTC 1 .* HTTP 503 in \d+ ms busy HTTP 503 1 Mar 2026/,
    );
    assert.doesNotMatch(failing.body, /Redeliver/, 'a delivery still being tried is not redelivered');

    owner.fixture.runtime.clock.advance(10_000);
    await owner.fixture.runtime.jobs.drain();
    const delivered = await owner.client.get(hook.page);
    const [succeeded] = deliveryRows(delivered.body);
    assert.match(
      succeeded ?? '',
      /^task\.created evt_\w+ Succeeded 2 .* HTTP 204 1 Mar 2026, 12:00 UTC Redeliver/,
    );
    const deliveryId = /deliveries\/(whd_\w+)\/redeliver/.exec(delivered.body)?.[1];
    assert.ok(deliveryId);

    const redelivered = await owner.client.post(`${hook.page}/deliveries/${deliveryId}/redeliver`, {});
    assert.equal(redelivered.status, 303);
    assert.equal(redelivered.location, `${hook.page}#deliveries`);
    await owner.fixture.runtime.jobs.drain();
    const requests = await owner.receiver.waitFor(3);
    assert.equal(
      requests[2]?.headers['webhook-id'],
      requests[0]?.headers['webhook-id'],
      'the same event again',
    );
    assert.equal(requests[2]?.body, requests[0]?.body);
    const rows = deliveryRows((await owner.client.get(hook.page)).body);
    assert.equal(rows.length, 2);
    assert.match(rows[0] ?? '', /Succeeded 1 .* HTTP 204/);

    assert.equal((await owner.client.post(`${hook.page}/pause`, {})).status, 303);
    const whilePaused = await owner.client.post(`${hook.page}/deliveries/${deliveryId}/redeliver`, {});
    assert.equal(whilePaused.status, 409);
    assert.match(whilePaused.body, /<meta name="error-code" content="subscription_disabled">/);
    assert.deepEqual(formErrors(whilePaused.body), [
      'The subscription is paused; resume it first, then redeliver.',
    ]);
    assert.equal(deliveryRows(whilePaused.body).length, 2, 'nothing queued');

    const unknown = await owner.client.post(
      `${hook.page}/deliveries/whd_00000000000000000000000000/redeliver`,
      {},
    );
    assert.equal(unknown.status, 404);
  });

  it("answers 404 for another workspace's subscription and deliveries, and changes nothing", async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const mine = await subscribe(owner);
    const theirs = await owner.fixture.provision({ email: 'other@example.com', name: 'Other Ltd' });
    const hooks = hooksOf(owner.fixture);
    const foreign = await createSubscription(
      hooks,
      theirs.workspaceId,
      {
        url: `${owner.receiver.url}/theirs`,
        event_types: ['task.created'],
      },
      OPERATOR_SOURCE,
    );
    assert.ok(foreign.ok);
    const foreignId = foreign.value.id;
    const theirKey = await createApiKey(
      owner.fixture.runtime.database.db,
      owner.fixture.runtime.clock,
      {
        workspaceId: theirs.workspaceId,
        name: 'theirs',
      },
      OPERATOR_SOURCE,
    );
    assert.ok(theirKey.ok);
    const { key } = theirKey.value;
    await callApi({ ...owner, apiKey: key }, 'POST', '/tasks', { title: 'theirs' });
    await owner.fixture.runtime.jobs.drain();
    const [foreignDelivery] = await owner.fixture.runtime.database.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('subscription_id', '=', foreignId)
      .execute();
    assert.ok(foreignDelivery);

    const viaMine = `${owner.page}/${foreignId}`;
    assert.equal((await owner.client.get(viaMine)).status, 404);
    for (const action of ['event-types', 'pause', 'resume', 'rotate-secret', 'delete']) {
      const answer = await owner.client.post(`${viaMine}/${action}`, { event_types: ['*'], grace: 'now' });
      assert.equal(answer.status, 404, action);
    }
    assert.equal(
      (await owner.client.post(`${viaMine}/deliveries/${foreignDelivery.id}/redeliver`, {})).status,
      404,
    );
    assert.equal(
      (await owner.client.post(`${mine.page}/deliveries/${foreignDelivery.id}/redeliver`, {})).status,
      404,
      "another subscription's delivery through mine",
    );
    const theirPage = `/w/${theirs.workspaceId}/integrations/webhooks`;
    assert.equal((await owner.client.get(theirPage)).status, 404);
    assert.equal((await owner.client.get(`${theirPage}/${foreignId}`)).status, 404);
    assert.equal((await owner.client.post(`${theirPage}/${foreignId}/pause`, {})).status, 404);
    assert.equal(
      (await owner.client.post(theirPage, { url: owner.receiver.url, event_types: ['*'] })).status,
      404,
    );

    const after = await getSubscription(hooks, theirs.workspaceId, foreignId);
    assert.equal(after?.status, 'enabled');
    assert.deepEqual(after?.event_types, ['task.created']);
    assert.equal(after?.previous_secret_expires_at, null);
    const deliveries = await owner.fixture.runtime.database.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('subscription_id', '=', foreignId)
      .execute();
    assert.equal(deliveries.length, 1, 'nothing redelivered');
  });

  it('answers 404, never a 500, for ids no record can have (NUL, overlong)', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const hook = await subscribe(owner);
    for (const id of ['%00', 'x'.repeat(65), 'hook_%00']) {
      assert.equal((await owner.client.get(`/w/${id}/integrations/webhooks`)).status, 404, id);
      assert.equal((await owner.client.get(`${owner.page}/${id}`)).status, 404, id);
      assert.equal((await owner.client.post(`${owner.page}/${id}/pause`, {})).status, 404, id);
      assert.equal((await owner.client.post(`${hook.page}/deliveries/${id}/redeliver`, {})).status, 404, id);
      assert.equal(
        (await owner.client.get(`/w/${owner.workspaceId}/integrations/keys/${id}/rotate`)).status,
        404,
      );
    }
  });

  it('keeps members out with 403 on every page and action', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const hook = await subscribe(owner);
    const db = owner.fixture.runtime.database.db;
    const member = await createUser(db, owner.fixture.runtime.clock, {
      email: 'member@example.com',
      passwordHash: await hashPassword(PASSWORD),
    });
    assert.ok(member.ok);
    await db
      .insertInto('workspace_members')
      .values({
        id: newId('member', owner.fixture.runtime.clock.now()),
        workspace_id: owner.workspaceId,
        email: 'member@example.com',
        role: 'member',
        user_id: member.value.id,
        created_at: Date.now(),
      })
      .execute();
    const client = webClient(owner.fixture.runtime.app);
    await client.get('/sign-in');
    assert.equal(
      (await client.post('/sign-in', { email: 'member@example.com', password: PASSWORD })).status,
      303,
    );
    await client.get(`/w/${owner.workspaceId}`);

    assert.equal((await client.get(owner.page)).status, 403);
    assert.equal((await client.get(hook.page)).status, 403);
    assert.equal(
      (await client.post(owner.page, { url: owner.receiver.url, event_types: ['*'] })).status,
      403,
    );
    for (const action of ['event-types', 'pause', 'rotate-secret', 'delete']) {
      assert.equal(
        (await client.post(`${hook.page}/${action}`, { event_types: ['*'], grace: 'now' })).status,
        403,
      );
    }
    const subscription = await getSubscription(hooksOf(owner.fixture), owner.workspaceId, hook.id);
    assert.equal(subscription?.status, 'enabled');
    assert.deepEqual(subscription?.event_types, ['task.created']);
    assert.deepEqual(await subscriptionIds(owner), [hook.id]);
  });

  it('shows script stored in a webhook URL and description as text', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const created = await owner.client.post(owner.page, {
      url: `${owner.receiver.url}/hooks?q=%22%3E%3Cscript%3Ealert(1)%3C/script%3E`,
      description: `<img src=x onerror="alert('description')"><script>alert('description')</script>`,
      event_types: ['*'],
    });
    assert.equal(created.status, 201);
    const [id] = await subscriptionIds(owner);
    assert.ok(id);
    // The URL parser percent-encodes what it stores; an address stored raw (by an older version, an
    // operator) must still come out as text.
    await owner.fixture.runtime.database.db
      .updateTable('webhook_subscriptions')
      .set({ url: `https://hooks.example.com/"><script>alert('raw')</script>` })
      .where('id', '=', id)
      .execute();
    for (const page of [owner.page, `${owner.page}/${id}`]) {
      const html = (await owner.client.get(page)).body;
      assert.doesNotMatch(html, /<script>alert|<img src=x/, page);
      assert.match(html, /&lt;script&gt;alert\(&#39;raw&#39;\)&lt;\/script&gt;/, page);
      assert.match(html, /&lt;img src=x onerror=&quot;alert\(&#39;description&#39;\)&quot;&gt;/, page);
    }
  });

  it('deletes a subscription and its delivery history', async (t) => {
    const owner = await ownerOnWebhooksPage(t);
    const hook = await subscribe(owner);
    await createTask(owner);
    await owner.fixture.runtime.jobs.drain();
    const deleted = await owner.client.post(`${hook.page}/delete`, {});
    assert.equal(deleted.status, 303);
    assert.equal(deleted.location, owner.page);
    assert.deepEqual(await subscriptionIds(owner), []);
    assert.match((await owner.client.get(owner.page)).body, /No webhook subscriptions yet/);
    assert.equal((await owner.client.get(hook.page)).status, 404);
  });
});
