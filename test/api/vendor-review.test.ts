// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiFixture, publishedEvents, startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Vendor {
  id: string;
  name: string;
  owner_id: string | null;
  next_review_date: string | null;
}

interface AuditEvent {
  action: string;
  actor: { user_id: string | null; api_key_id: string | null; label: string };
  target: { type: string; id: string; label: string | null } | null;
  changes: Record<string, { from: unknown; to: unknown }> | null;
}

async function names(api: ApiFixture, query: string): Promise<string[]> {
  const response = await api.call('GET', `/vendors${query}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.data.map((vendor: Vendor) => vendor.name);
}

async function person(api: ApiFixture, email: string, key?: string): Promise<string> {
  const response = await api.call('POST', '/people', { json: { email }, ...(key ? { key } : {}) });
  return response.body.id;
}

describe(`vendor owners and reviews on ${testDialect}`, () => {
  it('record an owner and the next review date, audited with the API key as the actor', async (t) => {
    const api = await startApiFixture(t);
    const ada = await person(api, 'ada@example.com');
    const grace = await person(api, 'grace@example.com');
    const created = await api.call('POST', '/vendors', {
      json: { name: 'Example Cloud', owner_id: ada, next_review_date: '2026-09-30' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual([created.body.owner_id, created.body.next_review_date], [ada, '2026-09-30']);
    assert.deepEqual((await api.call('GET', `/vendors/${created.body.id}`)).body, created.body);

    api.runtime.clock.advance(60_000);
    const moved = await api.call('PATCH', `/vendors/${created.body.id}`, {
      json: { owner_id: grace, next_review_date: '2027-03-31', status: 'active' },
    });
    assert.deepEqual(
      [moved.status, moved.body.owner_id, moved.body.next_review_date],
      [200, grace, '2027-03-31'],
    );
    const same = await api.call('PATCH', `/vendors/${created.body.id}`, { json: { owner_id: grace } });
    assert.deepEqual(same.body, moved.body, 'nothing changed');
    const cleared = await api.call('PATCH', `/vendors/${created.body.id}`, {
      json: { owner_id: null, next_review_date: null, name: 'Example Cloud Ltd' },
    });
    assert.deepEqual([cleared.body.owner_id, cleared.body.next_review_date], [null, null]);
    assert.equal((await api.call('DELETE', `/vendors/${created.body.id}`)).status, 204);

    assert.deepEqual(
      (await publishedEvents(api))
        .filter((event) => event.type.startsWith('vendor.'))
        .map((event) => [event.type, event.data.owner_id ?? null]),
      [
        ['vendor.created', ada],
        ['vendor.updated', grace],
        ['vendor.updated', null],
        ['vendor.deleted', null],
      ],
    );
    const me = (await api.call('GET', '/me')).body;
    const audit: AuditEvent[] = (await api.call('GET', `/audit-events?target_id=${created.body.id}`)).body
      .data;
    assert.deepEqual(
      audit.map((event) => [event.action, event.target?.label, event.changes]),
      [
        ['vendor.deleted', 'Example Cloud Ltd', null],
        [
          'vendor.updated',
          'Example Cloud Ltd',
          {
            name: { from: 'Example Cloud', to: 'Example Cloud Ltd' },
            owner_id: { from: grace, to: null },
            next_review_date: { from: '2027-03-31', to: null },
          },
        ],
        [
          'vendor.updated',
          'Example Cloud',
          {
            owner_id: { from: ada, to: grace },
            next_review_date: { from: '2026-09-30', to: '2027-03-31' },
          },
        ],
        ['vendor.created', 'Example Cloud', null],
      ],
    );
    for (const event of audit) {
      assert.deepEqual(event.actor, {
        user_id: null,
        api_key_id: api.org.keyId,
        label: `API key “test key” (${me.api_key.prefix}…)`,
      });
    }
  });

  it('filter by owner and by reviews due before a date, oldest first', async (t) => {
    const api = await startApiFixture(t);
    const ada = await person(api, 'ada@example.com');
    const vendors = [
      { name: 'Overdue', next_review_date: '2026-02-15', owner_id: ada },
      { name: 'Today', next_review_date: '2026-03-01' },
      { name: 'Later', next_review_date: '2026-12-31', owner_id: ada },
      { name: 'Never reviewed' },
      { name: 'Gone', next_review_date: '2025-01-01', status: 'offboarded' },
    ];
    for (const json of vendors) {
      assert.equal((await api.call('POST', '/vendors', { json })).status, 201);
      api.runtime.clock.advance(1);
    }
    assert.deepEqual(await names(api, '?review_due_before=2026-03-01'), ['Overdue', 'Gone']);
    assert.deepEqual(await names(api, '?review_due_before=2026-03-02'), ['Overdue', 'Today', 'Gone']);
    assert.deepEqual(await names(api, '?review_due_before=2026-03-01&status=active'), ['Overdue']);
    assert.deepEqual(await names(api, '?review_due_before=2027-01-01'), [
      'Overdue',
      'Today',
      'Later',
      'Gone',
    ]);
    assert.deepEqual(await names(api, `?owner_id=${ada}`), ['Overdue', 'Later']);
    assert.deepEqual(await names(api, `?owner_id=${ada}&review_due_before=2026-03-01`), ['Overdue']);
    assert.deepEqual(await names(api, '?owner_id=per_nobody'), []);
    const paged = await walkPages<Vendor>(api, '/vendors?review_due_before=2027-01-01&limit=1');
    assert.deepEqual(
      [paged.items.map((vendor) => vendor.name), paged.pages],
      [['Overdue', 'Today', 'Later', 'Gone'], 4],
    );
    for (const query of [
      'review_due_before=2026-02-30',
      'review_due_before=tomorrow',
      'owner_id=',
      'review_due=2026-01-01',
    ]) {
      const response = await api.call('GET', `/vendors?${query}`);
      assert.deepEqual([response.status, response.body.code], [400, 'invalid_request'], query);
    }
  });

  it('refuse a bad owner or date with 400 naming the field', async (t) => {
    const api = await startApiFixture(t);
    const cases: [unknown, string][] = [
      [{ name: 'x', next_review_date: '2026-02-30' }, 'body/next_review_date'],
      [{ name: 'x', next_review_date: '2026-9-1' }, 'body/next_review_date'],
      [{ name: 'x', next_review_date: 20260901 }, 'body/next_review_date'],
      [{ name: 'x', owner_id: '' }, 'body/owner_id'],
      [{ name: 'x', owner_id: 'x'.repeat(65) }, 'body/owner_id'],
      [{ name: 'x', owner_id: ['per_a'] }, 'body/owner_id'],
    ];
    for (const [json, path] of cases) {
      const response = await api.call('POST', '/vendors', { json });
      assert.deepEqual([response.status, response.body.errors?.[0]?.path], [400, path], JSON.stringify(json));
    }
    const vendor = (await api.call('POST', '/vendors', { json: { name: 'x' } })).body;
    for (const [json, path] of cases) {
      const { name: _name, ...patch } = json as Record<string, unknown>;
      const response = await api.call('PATCH', `/vendors/${vendor.id}`, { json: patch });
      assert.deepEqual(
        [response.status, response.body.errors?.[0]?.path],
        [400, path],
        JSON.stringify(patch),
      );
    }
    assert.deepEqual((await api.call('GET', '/vendors')).body.data, [vendor], 'nothing else was written');
  });

  it('answer reference_not_found for a person of another workspace, and 404 for its vendors', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const ours = await person(api, 'ada@example.com');
    const theirs = await person(api, 'grace@example.com', other.key);
    const vendor = (await api.call('POST', '/vendors', { json: { name: 'Ours', owner_id: ours } })).body;

    for (const [method, path, json] of [
      ['POST', '/vendors', { name: 'x', owner_id: theirs }],
      ['POST', '/vendors', { name: 'x', owner_id: 'per_nobody' }],
      ['PATCH', `/vendors/${vendor.id}`, { owner_id: theirs }],
    ] as const) {
      const response = await api.call(method, path, { json });
      assert.deepEqual(
        [response.status, response.body.code, response.body.errors?.[0]?.path],
        [404, 'reference_not_found', 'body/owner_id'],
        `${method} ${path}`,
      );
    }
    for (const [method, json] of [
      ['GET', undefined],
      ['PATCH', { next_review_date: '2026-12-31' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await api.call(method, `/vendors/${vendor.id}`, { key: other.key, json });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], method);
    }
    assert.deepEqual((await api.call('GET', `/vendors?owner_id=${ours}`, { key: other.key })).body.data, []);
    assert.deepEqual((await api.call('GET', `/vendors/${vendor.id}`)).body, vendor, 'untouched');
    assert.deepEqual(
      (await publishedEvents(api))
        .filter((event) => event.type.startsWith('vendor.'))
        .map((event) => event.type),
      ['vendor.created'],
    );
  });
});
