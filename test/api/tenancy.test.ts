// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebhookFixture } from '../webhooks/fixture.ts';

interface Resource {
  path: string;
  create: (hookUrl: string) => unknown;
  patch: unknown;
  deletable: boolean;
}

const RESOURCES: Resource[] = [
  { path: '/tasks', create: () => ({ title: 'Ours' }), patch: { title: 'Theirs' }, deletable: true },
  {
    path: '/evidence',
    create: () => ({ title: 'Ours', url: 'https://evidence.example/ours' }),
    patch: { title: 'Theirs' },
    deletable: true,
  },
  {
    path: '/risks',
    create: () => ({ title: 'Ours', likelihood: 2, impact: 2 }),
    patch: { impact: 5 },
    deletable: true,
  },
  { path: '/vendors', create: () => ({ name: 'Ours' }), patch: { name: 'Theirs' }, deletable: true },
  {
    path: '/people',
    create: () => ({ email: 'ours@example.com' }),
    patch: { name: 'Theirs' },
    deletable: false,
  },
  {
    path: '/policies',
    create: () => ({ key: 'ours', title: 'Ours' }),
    patch: { title: 'Theirs' },
    deletable: false,
  },
  {
    path: '/hooks',
    create: (hookUrl) => ({ url: hookUrl, event_types: ['*'] }),
    patch: { description: 'Theirs' },
    deletable: true,
  },
];

async function expectNotFound(api: ApiFixture, key: string, method: string, path: string, json?: unknown) {
  const response = await api.call(method, path, { key, json });
  assert.deepEqual([response.status, response.body.code], [404, 'not_found'], `${method} ${path}`);
}

describe(`tenancy of every resource on ${testDialect}`, () => {
  it('another organization cannot list, read, change or delete a record, and nothing of it changes', async (t) => {
    const { api, receiver } = await startWebhookFixture(t);
    const them = await api.createOrganization('Them Ltd');
    const control = (await api.call('GET', '/controls?q=A.5.1&limit=1')).body.data[0];
    const records: { path: string; id: string; before: unknown }[] = [
      { path: '/controls', id: control.id, before: control },
    ];
    for (const resource of RESOURCES) {
      const created = await api.call('POST', resource.path, {
        json: resource.create(`${receiver.url}/hooks`),
      });
      assert.equal(created.status, 201, resource.path);
      const before = (await api.call('GET', `${resource.path}/${created.body.id}`)).body;
      records.push({ path: resource.path, id: created.body.id, before });
    }

    for (const { path, id } of records) {
      const theirList = await api.call('GET', `${path}?limit=200`, { key: them.key });
      assert.equal(theirList.status, 200, path);
      assert.ok(!theirList.body.data.some((item: { id: string }) => item.id === id), `${path} lists ours`);
      await expectNotFound(api, them.key, 'GET', `${path}/${id}`);
      const resource = RESOURCES.find((r) => r.path === path);
      await expectNotFound(api, them.key, 'PATCH', `${path}/${id}`, resource?.patch ?? { notes: 'Theirs' });
      if (resource?.deletable) await expectNotFound(api, them.key, 'DELETE', `${path}/${id}`);
    }

    const evidence = records.find((r) => r.path === '/evidence')?.id;
    await expectNotFound(api, them.key, 'GET', `/evidence/${evidence}/file`);
    const hook = records.find((r) => r.path === '/hooks')?.id;
    assert.equal((await api.call('POST', `/hooks/${hook}/test`)).status, 202);
    const delivery = (await api.call('GET', `/hooks/${hook}/deliveries`)).body.data[0].id;
    const theirHook = (
      await api.call('POST', '/hooks', {
        key: them.key,
        json: { url: `${receiver.url}/theirs`, event_types: ['*'] },
      })
    ).body.id;
    await expectNotFound(api, them.key, 'GET', `/hooks/${hook}/deliveries`);
    await expectNotFound(api, them.key, 'POST', `/hooks/${hook}/test`);
    await expectNotFound(api, them.key, 'POST', `/hooks/${hook}/rotate-secret`, {});
    await expectNotFound(api, them.key, 'POST', `/hooks/${hook}/deliveries/${delivery}/redeliver`);
    await expectNotFound(api, them.key, 'POST', `/hooks/${theirHook}/deliveries/${delivery}/redeliver`);

    for (const { path, id, before } of records) {
      assert.deepEqual((await api.call('GET', `${path}/${id}`)).body, before, `${path} changed`);
    }
  });

  it('another organization cannot name a person or control of ours in a body', async (t) => {
    const { api } = await startWebhookFixture(t);
    const them = await api.createOrganization('Them Ltd');
    const ourPerson = (await api.call('POST', '/people', { json: { email: 'ours@example.com' } })).body.id;
    const ourControl = (await api.call('GET', '/controls?limit=1')).body.data[0].id;
    const theirControl = (await api.call('GET', '/controls?limit=1', { key: them.key })).body.data[0].id;
    const theirTask = (await api.call('POST', '/tasks', { key: them.key, json: { title: 'Theirs' } })).body
      .id;
    const attempts: [string, string, unknown, string][] = [
      ['POST', '/tasks', { title: 'x', assignee_id: ourPerson }, 'body/assignee_id'],
      ['POST', '/tasks', { title: 'x', control_id: ourControl }, 'body/control_id'],
      ['PATCH', `/tasks/${theirTask}`, { assignee_id: ourPerson }, 'body/assignee_id'],
      ['POST', '/risks', { title: 'x', likelihood: 1, impact: 1, owner_id: ourPerson }, 'body/owner_id'],
      ['PATCH', `/controls/${theirControl}`, { owner_id: ourPerson }, 'body/owner_id'],
      [
        'POST',
        '/evidence',
        { title: 'x', url: 'https://e.example/x', control_ids: [ourControl] },
        'body/control_ids/0',
      ],
    ];
    for (const [method, path, json, field] of attempts) {
      const response = await api.call(method, path, { key: them.key, json });
      assert.deepEqual(
        [response.status, response.body.code, response.body.errors?.[0]?.path],
        [404, 'reference_not_found', field],
        `${method} ${path} ${JSON.stringify(json)}`,
      );
    }
    assert.equal((await api.call('GET', '/tasks', { key: them.key })).body.data.length, 1);
    assert.equal((await api.call('GET', '/risks', { key: them.key })).body.data.length, 0);
    assert.equal((await api.call('GET', '/evidence', { key: them.key })).body.data.length, 0);
  });

  it('readiness and /me count only the organization of the key', async (t) => {
    const { api } = await startWebhookFixture(t);
    const them = await api.createOrganization('Them Ltd');
    for (const control of (await api.call('GET', '/controls?limit=4')).body.data) {
      await api.call('PATCH', `/controls/${control.id}`, { json: { status: 'implemented' } });
    }
    assert.equal((await api.call('GET', '/readiness')).body.implemented, 4);
    assert.equal((await api.call('GET', '/readiness', { key: them.key })).body.implemented, 0);
    const me = (await api.call('GET', '/me', { key: them.key })).body;
    assert.deepEqual([me.organization.id, me.organization.name], [them.workspaceId, 'Them Ltd']);
  });
});
