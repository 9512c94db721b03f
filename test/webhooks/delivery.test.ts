// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { userActor } from '../../src/audit/index.ts';
import { acknowledgePolicy } from '../../src/compliance/index.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import { EVENT_TYPE_NAMES } from '../../src/webhooks/index.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import type { ApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebhookFixture, verifyAt } from './fixture.ts';

interface Envelope {
  id: string;
  type: string;
  created_at: string;
  workspace_id: string;
  data: Record<string, unknown>;
}

/** Calls the API and insists on a 2xx, naming the route when it is not there (yet). */
function caller(api: ApiFixture) {
  return async (method: string, path: string, json?: unknown) => {
    const response = await api.call(method, path, { json });
    assert.ok(
      response.status < 300,
      `${method} ${path} answered ${response.status}: ${JSON.stringify(response.body)}`,
    );
    return response.body;
  };
}

/** One change of every kind the REST API makes, each through its documented route. */
async function changeEverything(api: ApiFixture): Promise<void> {
  const call = caller(api);
  const [control] = (await call('GET', '/controls?limit=1')).data;
  await call('PATCH', `/controls/${control.id}`, { status: 'in_progress' });
  const task = await call('POST', '/tasks', { title: 'Write the access policy', description: 'Draft it.' });
  await call('PATCH', `/tasks/${task.id}`, { title: 'Write the access control policy' });
  await call('PATCH', `/tasks/${task.id}`, { status: 'completed' });
  await call('PATCH', `/tasks/${task.id}`, { status: 'open' });
  await call('DELETE', `/tasks/${task.id}`);
  const person = await call('POST', '/people', { email: 'ines@example.com', name: 'Ines' });
  await call('PATCH', `/people/${person.id}`, { title: 'CISO' });
  await call('PATCH', `/people/${person.id}`, { left_on: '2026-02-28' });
  const risk = await call('POST', '/risks', { title: 'Laptop theft', likelihood: 3, impact: 4 });
  await call('PATCH', `/risks/${risk.id}`, { impact: 5 });
  await call('DELETE', `/risks/${risk.id}`);
  const vendor = await call('POST', '/vendors', { name: 'Acme Cloud' });
  await call('PATCH', `/vendors/${vendor.id}`, { status: 'under_review' });
  await call('DELETE', `/vendors/${vendor.id}`);
  const policy = await call('POST', '/policies', { key: 'access-control', title: 'Access control policy' });
  await call('PATCH', `/policies/${policy.id}`, { title: 'Access control and identity policy' });
  await call('POST', `/policies/${policy.id}/approve`);
  const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
  const member = { actor: userActor({ id: 'usr_reader', email: 'reader@example.com' }) };
  const acknowledged = await acknowledgePolicy(deps, api.org.workspaceId, policy.id, 'usr_reader', member);
  assert.ok(acknowledged.ok, 'policy.acknowledged: members acknowledge in the app, not through the API');
  const evidence = await call('POST', '/evidence', {
    url: 'https://docs.example.com/access-policy.pdf',
    title: 'Access policy, signed',
  });
  await call('PATCH', `/evidence/${evidence.id}`, { title: 'Access policy, signed by the CEO' });
  await call('POST', `/evidence/${evidence.id}/retire`);
  await call('POST', `/evidence/${evidence.id}/restore`);
  await call('DELETE', `/evidence/${evidence.id}`);
  await call('PATCH', '/me', { organization: { name: 'Acme Holdings Ltd' } });
}

/** Validates each delivered body against its operation in the OpenAPI document's `webhooks`. */
async function webhookSchemas(api: ApiFixture) {
  const document = (await api.call('GET', '/openapi.json', { key: null })).body;
  const ajv = new Ajv2020({ strict: false });
  addFormats.default(ajv);
  ajv.addSchema({ $id: 'doc', components: document.components }, 'doc');
  return (type: string) => {
    const schema = document.webhooks[type].post.requestBody.content['application/json'].schema;
    return ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')));
  };
}

describe(`webhook delivery on ${testDialect}`, () => {
  it('delivers every event type to a real receiver, each verified by the standardwebhooks package', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { api, receiver } = hooks;
    const { id, secret } = await hooks.subscribe(['*']);
    await changeEverything(api);
    await caller(api)('POST', `/hooks/${id}/test`);
    api.runtime.clock.advance(366 * DAY_MS);
    const ended = await endElapsedTerms(api.runtime.database.db, {
      clock: api.runtime.clock,
      baseUrl: api.runtime.config.baseUrl,
    });
    assert.equal(ended.length, 1, 'the yearly term ended');
    await hooks.deliver();

    const schemaOf = await webhookSchemas(api);
    const delivered = receiver.requests.map((request) => {
      const event = verifyAt(t, secret, request) as Envelope;
      assert.equal(request.headers['webhook-id'], event.id, 'webhook-id is the event id');
      assert.equal(event.workspace_id, api.org.workspaceId);
      const validate = schemaOf(event.type);
      assert.ok(validate(event), `${event.type}: ${JSON.stringify(validate.errors)}`);
      return event;
    });
    assert.deepEqual(delivered.map((event) => event.type).sort(), [...EVENT_TYPE_NAMES].sort());
    const byType = new Map(delivered.map((event) => [event.type, event]));
    assert.equal(byType.get('task.completed')?.data.status, 'completed');
    assert.deepEqual(byType.get('workspace.plan_changed')?.data, {
      previous_plan: 'pro',
      plan: 'free',
      reason: 'term_ended',
    });
    assert.deepEqual(byType.get('workspace.renamed')?.data, {
      previous_name: 'Acme Ltd',
      name: 'Acme Holdings Ltd',
    });
    assert.equal(byType.get('webhook.test')?.data.subscription_id, id);
  });

  it('sends the stored body byte for byte with the Standard Webhooks headers', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { api, receiver } = hooks;
    await hooks.subscribe(['task.created']);
    const task = await caller(api)('POST', '/tasks', { title: 'Rotate the backup keys' });
    await hooks.deliver();
    const [request] = receiver.requests;
    assert.ok(request);
    const [event] = await api.runtime.database.db.selectFrom('webhook_events').selectAll().execute();
    assert.equal(request.body, event?.payload);
    assert.equal(request.method, 'POST');
    assert.equal(request.path, '/hooks');
    assert.equal(request.headers['content-type'], 'application/json');
    assert.equal(request.headers['webhook-timestamp'], String(api.runtime.clock.now().getTime() / 1000));
    assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(JSON.parse(request.body), {
      id: event?.id,
      type: 'task.created',
      created_at: api.runtime.clock.now().toISOString(),
      workspace_id: api.org.workspaceId,
      data: task,
    });
  });

  it('sends each subscription only the types it asked for, and only its own workspace’s', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { api, receiver } = hooks;
    await hooks.subscribe(['task.created'], `${receiver.url}/tasks-only`);
    const paused = await hooks.subscribe(['*'], `${receiver.url}/paused`);
    await caller(api)('PATCH', `/hooks/${paused.id}`, { status: 'disabled' });
    const other = await api.createOrganization('Other');
    const theirs = await api.call('POST', '/hooks', {
      key: other.key,
      json: { url: `${receiver.url}/theirs`, event_types: ['*'] },
    });
    assert.equal(theirs.status, 201);

    await caller(api)('POST', '/tasks', { title: 'Mine' });
    await caller(api)('POST', '/people', { email: 'someone@example.com' });
    await api.call('POST', '/tasks', { key: other.key, json: { title: 'Theirs' } });
    await hooks.deliver();
    const seen = receiver.requests.map((r) => [
      r.path,
      JSON.parse(r.body).type,
      JSON.parse(r.body).data.title,
    ]);
    assert.deepEqual(seen.sort(), [
      ['/tasks-only', 'task.created', 'Mine'],
      ['/theirs', 'task.created', 'Theirs'],
    ]);
  });

  it('lists deliveries newest first with attempts, status codes and latency', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { api, receiver } = hooks;
    receiver.answer((_request, index) =>
      index === 0 ? { status: 500, body: 'upstream exploded' } : { status: 200, body: '{"ok":true}' },
    );
    const { id } = await hooks.subscribe(['task.created']);
    await caller(api)('POST', '/tasks', { title: 'First' });
    await hooks.deliver();
    api.runtime.clock.advance(1000);
    await caller(api)('POST', '/tasks', { title: 'Second' });
    await hooks.deliver();

    const { data, next_cursor } = await caller(api)('GET', `/hooks/${id}/deliveries`);
    assert.equal(next_cursor, null);
    assert.deepEqual(
      data.map((d: { status: string; attempt_count: number; last_status_code: number }) => [
        d.status,
        d.attempt_count,
        d.last_status_code,
      ]),
      [
        ['succeeded', 1, 200],
        ['pending', 1, 500],
      ],
    );
    const [attempt] = data[1].attempts;
    assert.equal(attempt.number, 1);
    assert.equal(attempt.status_code, 500);
    assert.equal(attempt.response_excerpt, 'upstream exploded');
    assert.ok(Number.isInteger(attempt.duration_ms) && attempt.duration_ms >= 0);
    assert.ok(data[1].next_attempt_at > attempt.started_at);
    assert.equal(data[0].attempts[0].response_excerpt, '{"ok":true}');

    const pending = await caller(api)('GET', `/hooks/${id}/deliveries?status=pending`);
    assert.deepEqual(
      pending.data.map((d: { id: string }) => d.id),
      [data[1].id],
    );
    const paged = await caller(api)('GET', `/hooks/${id}/deliveries?limit=1`);
    const cursor = encodeURIComponent(paged.next_cursor);
    const second = await caller(api)('GET', `/hooks/${id}/deliveries?limit=1&cursor=${cursor}`);
    assert.deepEqual([paged.data[0].id, second.data[0].id], [data[0].id, data[1].id]);
    const other = await hooks.subscribe(['*'], `${receiver.url}/other`);
    const foreignCursor = await api.call('GET', `/hooks/${other.id}/deliveries?limit=1&cursor=${cursor}`);
    assert.deepEqual([foreignCursor.status, foreignCursor.body.code], [400, 'invalid_cursor']);
  });

  it('sends a test event to one subscription only, and redelivers with the same webhook-id and body', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { api, receiver } = hooks;
    const target = await hooks.subscribe(['*'], `${receiver.url}/target`);
    await hooks.subscribe(['*'], `${receiver.url}/bystander`);
    const test = await caller(api)('POST', `/hooks/${target.id}/test`);
    assert.deepEqual([test.status, test.event_type, test.attempts], ['pending', 'webhook.test', []]);
    await hooks.deliver();
    assert.deepEqual(
      receiver.requests.map((r) => r.path),
      ['/target'],
    );

    api.runtime.clock.advance(90_000);
    const again = await caller(api)('POST', `/hooks/${target.id}/deliveries/${test.id}/redeliver`);
    assert.notEqual(again.id, test.id);
    assert.equal(again.event_id, test.event_id);
    await hooks.deliver();
    const [first, second] = receiver.requests;
    assert.ok(first && second);
    assert.equal(second.headers['webhook-id'], first.headers['webhook-id']);
    assert.equal(second.body, first.body);
    assert.equal(
      Number(second.headers['webhook-timestamp']) - Number(first.headers['webhook-timestamp']),
      90,
    );
    verifyAt(t, target.secret, second);
    const listed = await caller(api)('GET', `/hooks/${target.id}/deliveries`);
    assert.deepEqual(
      listed.data.map((d: { id: string; status: string }) => [d.id, d.status]),
      [
        [again.id, 'succeeded'],
        [test.id, 'succeeded'],
      ],
    );
  });
});
