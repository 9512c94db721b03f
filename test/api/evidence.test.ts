// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newId } from '../../src/shared/ids.ts';
import { type ApiFixture, startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Evidence {
  id: string;
  kind: string;
  title: string;
  control_ids: string[];
  created_at: string;
}

async function events(api: ApiFixture) {
  const rows = await api.runtime.database.db
    .selectFrom('webhook_events')
    .select(['type', 'payload'])
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ type: row.type, data: JSON.parse(row.payload).data }));
}

async function controlIds(api: ApiFixture, key: string, ...references: string[]): Promise<string[]> {
  const ids = [];
  for (const reference of references) {
    ids.push((await api.call('GET', `/controls?q=${reference}`, { key })).body.data[0].id);
  }
  return ids;
}

/** `count` evidence rows written straight to the database, ten to each creation time. */
async function insertEvidence(api: ApiFixture, count: number, controlId: string) {
  const start = api.runtime.clock.now().getTime();
  const rows = Array.from({ length: count }, (_, i) => {
    const created = start + (i % (count / 10)) * 1000;
    return {
      id: newId('evd', new Date(created)),
      workspace_id: api.org.workspaceId,
      kind: 'link' as const,
      title: `Evidence ${i}`,
      url: `https://example.com/${i}`,
      file_name: null,
      file_size: null,
      file_sha256: null,
      content_type: null,
      storage_key: null,
      created_at: created,
      updated_at: created,
    };
  });
  const { db } = api.runtime.database;
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200);
    await db.insertInto('evidence').values(chunk).execute();
    const linked = chunk.filter((_, j) => (i + j) % 3 === 0);
    await db
      .insertInto('evidence_controls')
      .values(
        linked.map((row) => ({
          evidence_id: row.id,
          control_id: controlId,
          workspace_id: row.workspace_id,
          created_at: row.created_at,
        })),
      )
      .execute();
  }
  const newestFirst = (a: { created_at: number; id: string }, b: { created_at: number; id: string }) =>
    b.created_at - a.created_at || (a.id < b.id ? 1 : -1);
  const linked = rows.filter((_, i) => i % 3 === 0);
  return { all: rows.toSorted(newestFirst), linked: linked.toSorted(newestFirst) };
}

describe(`evidence links on ${testDialect}`, () => {
  it('are reported with a title and an http(s) URL, linked to controls, read back and deleted', async (t) => {
    const api = await startApiFixture(t);
    const [backup, logging] = await controlIds(api, api.org.key, 'A.8.13', 'A.8.15');
    const created = await api.call('POST', '/evidence', {
      json: {
        url: 'https://wiki.example.com/restore-test',
        title: 'Restore test, Q1',
        control_ids: [logging, backup, logging],
      },
    });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^evd_[0-9a-z]{26}$/);
    assert.deepEqual(created.body, {
      id: created.body.id,
      kind: 'link',
      title: 'Restore test, Q1',
      url: 'https://wiki.example.com/restore-test',
      file: null,
      control_ids: [backup, logging],
      retired_at: null,
      created_at: '2026-03-01T12:00:00.000Z',
      updated_at: '2026-03-01T12:00:00.000Z',
    });
    assert.deepEqual((await api.call('GET', `/evidence/${created.body.id}`)).body, created.body);
    assert.deepEqual((await api.call('GET', '/evidence')).body, { data: [created.body], next_cursor: null });
    assert.equal(
      (await api.call('GET', `/evidence/${created.body.id}/file`)).status,
      404,
      'a link has no file',
    );

    assert.equal((await api.call('DELETE', `/evidence/${created.body.id}`)).status, 204);
    assert.equal((await api.call('GET', `/evidence/${created.body.id}`)).status, 404);
    assert.equal((await api.call('DELETE', `/evidence/${created.body.id}`)).status, 404);
    const links = await api.runtime.database.db.selectFrom('evidence_controls').selectAll().execute();
    assert.deepEqual(links, []);
    assert.deepEqual(await events(api), [
      { type: 'evidence.created', data: created.body },
      { type: 'evidence.deleted', data: { id: created.body.id } },
    ]);
  });

  it('refuse URLs that are not http(s), and bodies that miss or add fields', async (t) => {
    const api = await startApiFixture(t);
    for (const url of [
      'javascript:alert(1)',
      'ftp://files.example.com/report.pdf',
      'data:text/html,<script>alert(1)</script>',
      'file:///etc/passwd',
      'http://',
      'wiki.example.com/page',
    ]) {
      const refused = await api.call('POST', '/evidence', { json: { url, title: 'x' } });
      assert.deepEqual(
        [refused.status, refused.body.code, refused.body.errors[0].path],
        [400, 'invalid_request', 'body/url'],
        url,
      );
    }
    const cases = [
      [{ url: 'https://example.com' }, 'body/title'],
      [{ url: 'https://example.com', title: '' }, 'body/title'],
      [{ url: 'https://example.com', title: 'x', kind: 'file' }, 'body/kind'],
      [{ url: 'https://example.com', title: 'x', control_ids: Array(101).fill('ctl_x') }, 'body/control_ids'],
    ] as const;
    for (const [json, path] of cases) {
      const refused = await api.call('POST', '/evidence', { json });
      assert.deepEqual(
        [refused.status, refused.body.errors?.[0]?.path],
        [400, path],
        JSON.stringify(json).slice(0, 80),
      );
    }
    const empty = await api.call('POST', '/evidence');
    const text = await api.call('POST', '/evidence', {
      headers: { 'content-type': 'text/plain' },
      json: 'x',
    });
    for (const refused of [empty, text]) {
      assert.deepEqual([refused.status, refused.body.code], [415, 'unsupported_media_type']);
    }
    assert.equal((await api.call('GET', '/evidence')).body.data.length, 0, 'nothing was written');
  });

  it('change their title and controls with PATCH, with an event only when something changed', async (t) => {
    const api = await startApiFixture(t);
    const [a, b] = await controlIds(api, api.org.key, 'A.5.1', 'A.5.2');
    const evidence = (
      await api.call('POST', '/evidence', {
        json: { url: 'https://example.com/policy', title: 'Policy', control_ids: [a] },
      })
    ).body;
    api.runtime.clock.advance(60_000);
    const retitled = await api.call('PATCH', `/evidence/${evidence.id}`, {
      json: { title: 'Signed policy', control_ids: [b, a] },
    });
    assert.equal(retitled.status, 200);
    assert.deepEqual(
      [retitled.body.title, retitled.body.control_ids, retitled.body.updated_at, retitled.body.url],
      ['Signed policy', [a, b], '2026-03-01T12:01:00.000Z', 'https://example.com/policy'],
    );
    const same = await api.call('PATCH', `/evidence/${evidence.id}`, { json: { control_ids: [a, b] } });
    assert.equal(same.body.updated_at, '2026-03-01T12:01:00.000Z', 'nothing changed');
    const unlinked = await api.call('PATCH', `/evidence/${evidence.id}`, { json: { control_ids: [] } });
    assert.deepEqual(unlinked.body.control_ids, []);
    for (const json of [{}, { url: 'https://example.com/other' }]) {
      assert.equal((await api.call('PATCH', `/evidence/${evidence.id}`, { json })).status, 400);
    }
    assert.deepEqual(
      (await events(api)).map((event) => event.type),
      ['evidence.created', 'evidence.updated', 'evidence.updated'],
    );
  });

  it('belong to one organization: another one cannot see, change, delete or link to them', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const [ours] = await controlIds(api, api.org.key, 'A.5.1');
    const [theirs] = await controlIds(api, other.key, 'A.5.1');
    const evidence = (
      await api.call('POST', '/evidence', {
        json: { url: 'https://example.com', title: 'x', control_ids: [ours] },
      })
    ).body;
    const key = other.key;
    assert.deepEqual((await api.call('GET', '/evidence', { key })).body.data, []);
    assert.deepEqual((await api.call('GET', `/evidence?control_id=${ours}`, { key })).body.data, []);
    assert.equal((await api.call('GET', `/evidence/${evidence.id}`, { key })).status, 404);
    assert.equal(
      (await api.call('PATCH', `/evidence/${evidence.id}`, { key, json: { title: 'y' } })).status,
      404,
    );
    assert.equal((await api.call('DELETE', `/evidence/${evidence.id}`, { key })).status, 404);
    const borrowed = await api.call('POST', '/evidence', {
      key,
      json: { url: 'https://example.com', title: 'x', control_ids: [theirs, ours] },
    });
    assert.deepEqual(
      [borrowed.status, borrowed.body.code, borrowed.body.errors[0].path],
      [404, 'reference_not_found', 'body/control_ids/1'],
    );
    const relinked = await api.call('PATCH', `/evidence/${evidence.id}`, { json: { control_ids: [theirs] } });
    assert.deepEqual([relinked.status, relinked.body.code], [404, 'reference_not_found']);
    assert.deepEqual((await api.call('GET', `/evidence/${evidence.id}`)).body, evidence, 'unchanged');
    assert.deepEqual((await api.call('GET', '/evidence', { key })).body.data, [], 'nothing was written');
  });
});

describe(`the evidence list on ${testDialect}`, () => {
  it('is newest first, and `since` keeps what was created at or after a time', async (t) => {
    const api = await startApiFixture(t);
    const titles = [];
    for (const title of ['first', 'second', 'third']) {
      await api.call('POST', '/evidence', { json: { url: 'https://example.com', title } });
      titles.push(title);
      api.runtime.clock.advance(60_000);
    }
    const list = async (query: string) =>
      (await api.call('GET', `/evidence${query}`)).body.data.map((e: Evidence) => e.title);
    assert.deepEqual(await list(''), ['third', 'second', 'first']);
    assert.deepEqual(await list('?since=2026-03-01T12:01:00Z'), ['third', 'second']);
    assert.deepEqual(await list('?since=2026-03-01T13:01:00.001%2B01:00'), ['third']);
    assert.deepEqual(await list('?since=2026-03-02T00:00:00Z'), []);
    for (const since of ['yesterday', '2026-03-01', '2026-03-01T12:00:00']) {
      const refused = await api.call('GET', `/evidence?since=${since}`);
      assert.deepEqual([refused.status, refused.body.errors[0].path], [400, 'querystring/since'], since);
    }
  });

  it('walks 1,000 rows page by page, each once and in order, also for one control', async (t) => {
    const api = await startApiFixture(t);
    const [control] = await controlIds(api, api.org.key, 'A.5.1');
    const { all, linked } = await insertEvidence(api, 1000, control as string);
    const walked = await walkPages<Evidence>(api, '/evidence?limit=37');
    assert.equal(walked.pages, Math.ceil(1000 / 37));
    assert.deepEqual(
      walked.items.map((e) => e.id),
      all.map((row) => row.id),
    );
    const ofControl = await walkPages<Evidence>(api, `/evidence?control_id=${control}&limit=50`);
    assert.deepEqual(
      ofControl.items.map((e) => e.id),
      linked.map((row) => row.id),
    );
    assert.ok(ofControl.items.every((e) => e.control_ids.includes(control as string)));
    const since = new Date(all[400]?.created_at ?? 0).toISOString();
    const recent = await walkPages<Evidence>(api, `/evidence?since=${since}&limit=200`);
    assert.deepEqual(
      recent.items.map((e) => e.id),
      all.filter((row) => row.created_at >= Date.parse(since)).map((row) => row.id),
    );
  });
});
