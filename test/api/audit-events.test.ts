// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rotateApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebhookFixture } from '../webhooks/fixture.ts';

interface AuditEvent {
  id: string;
  action: string;
  actor: { user_id: string | null; api_key_id: string | null; label: string };
  target: { type: string; id: string; label: string | null } | null;
  ip: string | null;
  user_agent: string | null;
  created_at: string;
}

describe(`GET /api/v1/audit-events on ${testDialect}`, () => {
  it('lists what the API key did to webhooks, newest first, with the key as the actor and the client address', async (t) => {
    const { api, receiver } = await startWebhookFixture(t);
    const headers = { 'user-agent': 'svc-audit-test/1.0' };
    // Ids order events by time; the manual clock moves on between requests as a real one would.
    const later = () => api.runtime.clock.advance(1000);
    later();
    const created = await api.call('POST', '/hooks', {
      json: { url: `${receiver.url}/hooks`, event_types: ['*'] },
      headers,
    });
    assert.equal(created.status, 201);
    const id = created.body.id;
    later();
    await api.call('PATCH', `/hooks/${id}`, { json: { status: 'disabled' }, headers });
    later();
    await api.call('PATCH', `/hooks/${id}`, { json: { status: 'enabled', description: 'CI' }, headers });
    later();
    await api.call('POST', `/hooks/${id}/rotate-secret`, { headers });
    later();
    assert.equal((await api.call('DELETE', `/hooks/${id}`, { headers })).status, 204);

    const { items } = await walkPages<AuditEvent>(api, '/audit-events?limit=2');
    const webhookEvents = items.filter((event) => event.action.startsWith('webhook.'));
    assert.deepEqual(
      webhookEvents.map((event) => event.action),
      [
        'webhook.deleted',
        'webhook.secret_rotated',
        'webhook.updated',
        'webhook.resumed',
        'webhook.paused',
        'webhook.created',
      ],
    );
    const key = await api.call('GET', '/me');
    for (const event of webhookEvents) {
      assert.deepEqual(event.actor, {
        user_id: null,
        api_key_id: api.org.keyId,
        label: `API key “test key” (${key.body.api_key.prefix}…)`,
      });
      assert.equal(event.ip, '127.0.0.1');
      assert.equal(event.user_agent, 'svc-audit-test/1.0');
      assert.equal(event.target?.id, id);
      assert.equal(event.target?.label, new URL(receiver.url).host);
    }
    assert.deepEqual(
      items.map((event) => event.id),
      items
        .map((event) => event.id)
        .sort()
        .reverse(),
      'newest first',
    );
    assert.deepEqual(
      items.slice(-2).map((event) => event.action),
      ['api_key.created', 'plan.purchased'],
      'the purchase of the workspace and its first key come first',
    );
  });

  it('pages through with cursors, filters by action, and refuses an unknown action or a cursor of another filter', async (t) => {
    const { api } = await startWebhookFixture(t);
    const clock = api.runtime.clock;
    let keyId = api.org.keyId;
    for (let round = 0; round < 5; round++) {
      clock.advance(1000);
      const rotated = await rotateApiKey(api.runtime.database.db, clock, keyId, OPERATOR_SOURCE);
      assert.ok(rotated.ok);
      keyId = rotated.value.info.id;
      api.org.key = rotated.value.key;
    }
    const all = await walkPages<AuditEvent>(api, '/audit-events?limit=2');
    assert.equal(all.items.length, 7, 'a purchase, the first key and five rotations');
    assert.equal(all.pages, 4);
    assert.equal(new Set(all.items.map((event) => event.id)).size, 7, 'no event twice across pages');

    const rotations = await walkPages<AuditEvent>(api, '/audit-events?action=api_key.rotated&limit=4');
    assert.equal(rotations.items.length, 5);
    assert.ok(rotations.items.every((event) => event.actor.label === 'Operator (CLI)' && event.ip === null));

    const first = await api.call('GET', '/audit-events?action=api_key.rotated&limit=1');
    const mixed = await api.call('GET', `/audit-events?limit=1&cursor=${first.body.next_cursor}`);
    assert.equal(mixed.status, 400);
    assert.equal(mixed.body.code, 'invalid_cursor');
    const unknown = await api.call('GET', '/audit-events?action=account.deleted_everything');
    assert.equal(unknown.status, 400);
    assert.match(unknown.headers.get('content-type') ?? '', /application\/problem\+json/);
  });

  it('shows a key only its own workspace’s events; a cursor of another workspace is refused', async (t) => {
    const { api } = await startWebhookFixture(t);
    const other = await api.createOrganization('Other Ltd');
    api.runtime.clock.advance(1000);
    await api.call('POST', '/hooks', {
      key: other.key,
      json: { url: 'http://localhost:9/x', event_types: ['*'] },
    });
    await api.call('POST', '/hooks', { json: { url: 'http://localhost:9/y', event_types: ['*'] } });

    const mine = await walkPages<AuditEvent>(api, '/audit-events');
    const theirs = await walkPages<AuditEvent>(api, '/audit-events', { key: other.key });
    assert.deepEqual(
      mine.items.map((event) => event.action),
      ['webhook.created', 'api_key.created', 'plan.purchased'],
    );
    assert.deepEqual(
      theirs.items.map((event) => event.action),
      ['webhook.created', 'api_key.created', 'plan.purchased'],
    );
    assert.equal(new Set([...mine.items, ...theirs.items].map((event) => event.id)).size, 6);
    assert.ok(theirs.items.every((event) => event.actor.api_key_id !== api.org.keyId));

    const page = await api.call('GET', '/audit-events?limit=1');
    const stolen = await api.call('GET', `/audit-events?limit=1&cursor=${page.body.next_cursor}`, {
      key: other.key,
    });
    assert.equal(stolen.status, 400);
    assert.equal(stolen.body.code, 'invalid_cursor');
  });

  it("records each change to a task with the key as the actor and what changed, and lists one record's events", async (t) => {
    const { api } = await startWebhookFixture(t);
    const later = () => api.runtime.clock.advance(1000);
    const task = (await api.call('POST', '/tasks', { json: { title: 'Write the access policy' } })).body;
    later();
    await api.call('PATCH', `/tasks/${task.id}`, { json: { due_date: '2026-12-01', title: 'Write it' } });
    later();
    await api.call('PATCH', `/tasks/${task.id}`, { json: { status: 'completed' } });
    later();
    await api.call('POST', '/tasks', { json: { title: 'Another task' } });
    later();
    const listed = await api.call('GET', `/audit-events?target_id=${task.id}`);
    assert.equal(listed.status, 200);
    const events = listed.body.data as (AuditEvent & { changes: unknown })[];
    assert.deepEqual(
      events.map((event) => [event.action, event.target?.label, event.changes]),
      [
        ['task.completed', 'Write it', { status: { from: 'open', to: 'completed' } }],
        [
          'task.updated',
          'Write it',
          {
            title: { from: 'Write the access policy', to: 'Write it' },
            due_date: { from: null, to: '2026-12-01' },
          },
        ],
        ['task.created', 'Write the access policy', null],
      ],
    );
    for (const event of events) assert.match(event.actor.label, /^API key /);
    const deleted = await api.call('DELETE', `/tasks/${task.id}`);
    assert.equal(deleted.status, 204);
    const afterDelete = await api.call('GET', `/audit-events?target_id=${task.id}&action=task.deleted`);
    assert.deepEqual(
      afterDelete.body.data.map((event: AuditEvent) => [event.action, event.target?.label]),
      [['task.deleted', 'Write it']],
    );
  });

  it('is described in the OpenAPI document with its schema and an example', async (t) => {
    const { api } = await startWebhookFixture(t);
    const document = (await api.call('GET', '/openapi.json', { key: null })).body;
    const operation = document.paths['/api/v1/audit-events']?.get;
    assert.equal(operation?.operationId, 'listAuditEvents');
    assert.ok(operation.parameters.some((p: { name: string }) => p.name === 'cursor'));
    const schema = document.components.schemas.AuditEvent;
    assert.ok(schema.examples?.length > 0);
    assert.ok(schema.properties.action.enum.includes('account.sign_in_failed'));
  });
});
