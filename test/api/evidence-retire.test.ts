// db-scope: both

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type ApiFixture, publishedEvents, startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface AuditEvent {
  action: string;
  actor: { api_key_id: string | null; label: string };
  target: { type: string; id: string; label: string | null } | null;
  changes: Record<string, { from: unknown; to: unknown }> | null;
}

async function controlId(api: ApiFixture, reference: string, key = api.org.key): Promise<string> {
  return (await api.call('GET', `/controls?q=${reference}&limit=1`, { key })).body.data[0].id;
}

async function reportLink(api: ApiFixture, title: string, controlIds: string[] = [], key = api.org.key) {
  const created = await api.call('POST', '/evidence', {
    key,
    json: { url: `https://wiki.example.com/${encodeURIComponent(title)}`, title, control_ids: controlIds },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  return created.body;
}

const ids = (response: { body: { data: { id: string }[] } }) => response.body.data.map((item) => item.id);

async function auditTrail(api: ApiFixture, id: string): Promise<AuditEvent[]> {
  const response = await api.call('GET', `/audit-events?target_id=${id}`);
  assert.equal(response.status, 200);
  return response.body.data;
}

describe(`retiring evidence on ${testDialect}`, () => {
  it('keeps it on GET with retired_at, hides it from lists unless asked, and restores it', async (t) => {
    const api = await startApiFixture(t);
    const backup = await controlId(api, 'A.8.13');
    const old = await reportLink(api, 'Restore test, 2025', [backup]);
    api.runtime.clock.advance(1000);
    const current = await reportLink(api, 'Restore test, 2026', [backup]);
    api.runtime.clock.advance(1000);

    const retired = await api.call('POST', `/evidence/${old.id}/retire`);
    assert.equal(retired.status, 200);
    assert.equal(retired.body.retired_at, api.runtime.clock.now().toISOString());
    assert.equal(retired.body.updated_at, retired.body.retired_at);
    assert.deepEqual(
      { ...retired.body, retired_at: null, updated_at: old.updated_at },
      old,
      'nothing else changed',
    );
    assert.deepEqual((await api.call('GET', `/evidence/${old.id}`)).body, retired.body);

    assert.deepEqual(ids(await api.call('GET', '/evidence')), [current.id]);
    assert.deepEqual(ids(await api.call('GET', '/evidence?retired=false')), [current.id]);
    assert.deepEqual(ids(await api.call('GET', '/evidence?retired=true')), [old.id]);
    assert.deepEqual(ids(await api.call('GET', '/evidence?retired=all')), [current.id, old.id]);
    assert.deepEqual(ids(await api.call('GET', `/evidence?control_id=${backup}`)), [current.id]);
    assert.deepEqual(ids(await api.call('GET', `/evidence?control_id=${backup}&retired=true`)), [old.id]);
    assert.deepEqual(ids(await api.call('GET', `/evidence?control_id=${backup}&retired=all`)), [
      current.id,
      old.id,
    ]);

    const again = await api.call('POST', `/evidence/${old.id}/retire`);
    assert.deepEqual([again.status, again.body], [200, retired.body], 'retiring twice changes nothing');

    api.runtime.clock.advance(1000);
    const restored = await api.call('POST', `/evidence/${old.id}/restore`);
    assert.equal(restored.status, 200);
    assert.equal(restored.body.retired_at, null);
    assert.deepEqual(ids(await api.call('GET', '/evidence')), [current.id, old.id]);
    const restoredAgain = await api.call('POST', `/evidence/${current.id}/restore`);
    assert.deepEqual([restoredAgain.status, restoredAgain.body], [200, current]);

    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.id, event.data.retired_at]),
      [
        ['evidence.created', old.id, null],
        ['evidence.created', current.id, null],
        ['evidence.retired', old.id, retired.body.retired_at],
        ['evidence.restored', old.id, null],
      ],
    );
    const trail = await auditTrail(api, old.id);
    assert.deepEqual(
      trail.map((event) => [event.action, event.target, event.changes]),
      [
        [
          'evidence.restored',
          { type: 'evidence', id: old.id, label: 'Restore test, 2025' },
          { retired_at: { from: retired.body.retired_at, to: null } },
        ],
        [
          'evidence.retired',
          { type: 'evidence', id: old.id, label: 'Restore test, 2025' },
          { retired_at: { from: null, to: retired.body.retired_at } },
        ],
        ['evidence.created', { type: 'evidence', id: old.id, label: 'Restore test, 2025' }, null],
      ],
    );
    for (const event of trail) {
      assert.equal(event.actor.api_key_id, api.org.keyId);
      assert.match(event.actor.label, /^API key /);
    }
  });

  it('keeps the file of retired file evidence downloadable', async (t) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-retire-'));
    t.after(() => rmSync(dataDir, { recursive: true, force: true }));
    const api = await startApiFixture(t, { env: { DATA_DIR: dataDir } });
    const data = new FormData();
    data.append('title', 'Control list');
    data.append('file', new Blob(['control,status\nA.5.1,implemented\n']), 'controls.csv');
    const created = await api.call('POST', '/evidence', { form: data });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal((await api.call('POST', `/evidence/${created.body.id}/retire`)).status, 200);
    const download = await api.call('GET', `/evidence/${created.body.id}/file`);
    assert.equal(download.status, 200);
    assert.equal(download.body, 'control,status\nA.5.1,implemented\n');
    const [event] = await auditTrail(api, created.body.id);
    assert.equal(event?.action, 'evidence.retired');
    const [, createdEvent] = await auditTrail(api, created.body.id);
    assert.equal(createdEvent?.action, 'evidence.created');
    assert.equal(createdEvent?.actor.api_key_id, api.org.keyId, 'an upload is recorded too');
  });

  it('refuses a bad filter with 400, and answers 404 for unknown ids and other workspaces', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const theirs = await reportLink(api, 'Their evidence', [], other.key);
    for (const query of ['retired=yes', 'retired=', 'retired=true&retired=all', 'retired=TRUE']) {
      const response = await api.call('GET', `/evidence?${query}`);
      assert.equal(response.status, 400, query);
      assert.equal(response.body.code, 'invalid_request');
    }
    for (const action of ['retire', 'restore']) {
      for (const id of [theirs.id, 'evd_nope', 'x'.repeat(65)]) {
        const response = await api.call('POST', `/evidence/${id}/${action}`);
        assert.equal(response.status, id.length > 64 ? 400 : 404, `${action} ${id}`);
      }
    }
    assert.equal((await api.call('GET', `/evidence/${theirs.id}`, { key: other.key })).body.retired_at, null);
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => event.type),
      ['evidence.created'],
      'only the other workspace’s creation',
    );
  });
});

describe(`the audit trail of evidence on ${testDialect}`, () => {
  it('records creation, retitling, relinking and deletion with the API key and what changed', async (t) => {
    const api = await startApiFixture(t);
    const [a, b, c] = [
      await controlId(api, 'A.5.1'),
      await controlId(api, 'A.5.2'),
      await controlId(api, 'A.5.3'),
    ];
    const evidence = await reportLink(api, 'Policy set', [a, b]);
    api.runtime.clock.advance(1000);
    const retitled = await api.call('PATCH', `/evidence/${evidence.id}`, {
      json: { title: 'Policy set, signed', control_ids: [c, b] },
    });
    assert.equal(retitled.status, 200);
    api.runtime.clock.advance(1000);
    await api.call('PATCH', `/evidence/${evidence.id}`, { json: { control_ids: [] } });
    api.runtime.clock.advance(1000);
    await api.call('PATCH', `/evidence/${evidence.id}`, { json: { control_ids: [] } });
    assert.equal((await api.call('DELETE', `/evidence/${evidence.id}`)).status, 204);

    const trail = await auditTrail(api, evidence.id);
    const label = (title: string) => ({ type: 'evidence', id: evidence.id, label: title });
    assert.deepEqual(
      trail.map((event) => [event.action, event.target, event.changes]),
      [
        ['evidence.deleted', label('Policy set, signed'), null],
        ['evidence.updated', label('Policy set, signed'), { control_ids: { from: [b, c], to: [] } }],
        [
          'evidence.updated',
          label('Policy set, signed'),
          {
            title: { from: 'Policy set', to: 'Policy set, signed' },
            control_ids: { from: [a, b], to: [b, c] },
          },
        ],
        ['evidence.created', label('Policy set'), null],
      ],
    );
    for (const event of trail) assert.equal(event.actor.api_key_id, api.org.keyId);
  });
});
