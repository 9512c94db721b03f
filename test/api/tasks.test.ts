// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { createTask, updateTask } from '../../src/compliance/index.ts';
import { startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Task {
  id: string;
  title: string;
  status: string;
  completed_at: string | null;
}

async function eventTypes(api: Awaited<ReturnType<typeof startApiFixture>>) {
  const events = await api.runtime.database.db
    .selectFrom('webhook_events')
    .select(['type', 'payload'])
    .orderBy('id')
    .execute();
  return events.map((e) => [e.type, JSON.parse(e.payload).data.id]);
}

describe(`tasks on ${testDialect}`, () => {
  it('are created open, from a title and a description', async (t) => {
    const api = await startApiFixture(t);
    const created = await api.call('POST', '/tasks', {
      json: { title: 'Write the access control policy', description: 'Draft, review, publish.' },
    });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^tsk_[0-9a-z]{26}$/);
    assert.deepEqual(
      { ...created.body, id: undefined },
      {
        id: undefined,
        title: 'Write the access control policy',
        description: 'Draft, review, publish.',
        status: 'open',
        due_date: null,
        assignee_id: null,
        control_id: null,
        completed_at: null,
        created_at: '2026-03-01T12:00:00.000Z',
        updated_at: '2026-03-01T12:00:00.000Z',
      },
    );
    assert.deepEqual((await api.call('GET', `/tasks/${created.body.id}`)).body, created.body);
    assert.deepEqual(await eventTypes(api), [['task.created', created.body.id]]);
  });

  it('link a person and a control of the workspace, never of another one', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const person = (await api.call('POST', '/people', { json: { email: 'dev@example.com' } })).body;
    const control = (await api.call('GET', '/controls?q=A.8.28')).body.data[0];
    const theirPerson = (
      await api.call('POST', '/people', { key: other.key, json: { email: 'dev@example.com' } })
    ).body;
    const theirControl = (await api.call('GET', '/controls?q=A.8.28', { key: other.key })).body.data[0];

    const linked = await api.call('POST', '/tasks', {
      json: {
        title: 'Secure coding training',
        assignee_id: person.id,
        control_id: control.id,
        due_date: '2026-04-30',
      },
    });
    assert.equal(linked.status, 201);
    assert.deepEqual(
      [linked.body.assignee_id, linked.body.control_id, linked.body.due_date],
      [person.id, control.id, '2026-04-30'],
    );

    for (const [json, field] of [
      [{ title: 'x', assignee_id: theirPerson.id }, 'assignee_id'],
      [{ title: 'x', control_id: theirControl.id }, 'control_id'],
      [{ title: 'x', control_id: 'ctl_doesnotexist' }, 'control_id'],
    ] as const) {
      const refused = await api.call('POST', '/tasks', { json });
      assert.deepEqual(
        [refused.status, refused.body.code, refused.body.errors[0].path],
        [404, 'reference_not_found', `body/${field}`],
      );
    }
    const moved = await api.call('PATCH', `/tasks/${linked.body.id}`, {
      json: { assignee_id: theirPerson.id },
    });
    assert.equal(moved.status, 404);
    assert.equal(
      (await api.call('GET', `/tasks/${linked.body.id}`)).body.assignee_id,
      person.id,
      'nothing changed',
    );
    assert.equal((await api.call('GET', '/tasks', { key: other.key })).body.data.length, 0);
  });

  it('complete and reopen, each with its event and completion time', async (t) => {
    const api = await startApiFixture(t);
    const task = (await api.call('POST', '/tasks', { json: { title: 'Run the internal audit' } })).body;
    api.runtime.clock.advance(60_000);
    const completed = await api.call('PATCH', `/tasks/${task.id}`, { json: { status: 'completed' } });
    assert.equal(completed.body.status, 'completed');
    assert.equal(completed.body.completed_at, '2026-03-01T12:01:00.000Z');
    const again = await api.call('PATCH', `/tasks/${task.id}`, { json: { status: 'completed' } });
    assert.equal(again.body.completed_at, '2026-03-01T12:01:00.000Z', 'completing twice changes nothing');
    const reopened = await api.call('PATCH', `/tasks/${task.id}`, {
      json: { status: 'open', title: 'Run the audit' },
    });
    assert.deepEqual(
      [reopened.body.status, reopened.body.completed_at, reopened.body.title],
      ['open', null, 'Run the audit'],
    );
    await api.call('PATCH', `/tasks/${task.id}`, { json: { description: 'Q2' } });
    assert.deepEqual(
      (await eventTypes(api)).map(([type]) => type),
      ['task.created', 'task.completed', 'task.reopened', 'task.updated'],
    );
  });

  it('keep both of two changes made at once to one task, and publish one event per transition', async (t) => {
    const api = await startApiFixture(t);
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
    const { workspaceId } = api.org;
    for (let round = 0; round < 5; round++) {
      const created = await createTask(deps, workspaceId, { title: `Round ${round}` }, OPERATOR_SOURCE);
      const task = created.ok ? created.value : assert.fail(created.error.code);
      // In process, so both read the task before either writes (over HTTP they often arrive in turn).
      const [renamed, completed] = await Promise.all([
        updateTask(deps, workspaceId, task.id, { title: `Renamed ${round}` }, OPERATOR_SOURCE),
        updateTask(deps, workspaceId, task.id, { status: 'completed' }, OPERATOR_SOURCE),
      ]);
      assert.ok(renamed.ok && completed.ok);
      const stored = (await api.call('GET', `/tasks/${task.id}`)).body;
      assert.deepEqual([stored.title, stored.status], [`Renamed ${round}`, 'completed'], `round ${round}`);
    }
    const types = (await eventTypes(api)).map(([type]) => type);
    assert.equal(types.filter((type) => type === 'task.completed').length, 5, types.join());
  });

  it('list open and completed, filterable, oldest first', async (t) => {
    const api = await startApiFixture(t);
    const ids: string[] = [];
    for (const title of ['a', 'b', 'c', 'd']) {
      ids.push((await api.call('POST', '/tasks', { json: { title } })).body.id);
      api.runtime.clock.advance(1);
    }
    await api.call('PATCH', `/tasks/${ids[1]}`, { json: { status: 'completed' } });
    await api.call('PATCH', `/tasks/${ids[3]}`, { json: { status: 'completed' } });
    const titles = async (query: string) =>
      (await api.call('GET', `/tasks${query}`)).body.data.map((task: Task) => task.title);
    assert.deepEqual(await titles(''), ['a', 'b', 'c', 'd']);
    assert.deepEqual(await titles('?status=open'), ['a', 'c']);
    assert.deepEqual(await titles('?status=completed'), ['b', 'd']);
  });

  it('delete: 204, then 404, and a task.deleted event', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const task = (await api.call('POST', '/tasks', { json: { title: 'Temporary' } })).body;
    const foreign = await api.call('DELETE', `/tasks/${task.id}`, { key: other.key });
    assert.equal(foreign.status, 404);
    const deleted = await api.call('DELETE', `/tasks/${task.id}`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.body, '');
    assert.equal((await api.call('GET', `/tasks/${task.id}`)).status, 404);
    assert.equal((await api.call('DELETE', `/tasks/${task.id}`)).status, 404);
    assert.deepEqual(await eventTypes(api), [
      ['task.created', task.id],
      ['task.deleted', task.id],
    ]);
  });

  it('refuse invalid tasks with 400 naming each field', async (t) => {
    const api = await startApiFixture(t);
    const cases: [unknown, string[]][] = [
      [{}, ['body/title']],
      [{ title: '' }, ['body/title']],
      [{ title: 'x'.repeat(201) }, ['body/title']],
      [{ title: 'x', due_date: '2026-02-30' }, ['body/due_date']],
      [{ title: 'x', status: 'completed' }, ['body/status']],
      [{ title: 7, priority: 'high' }, ['body/title', 'body/priority']],
    ];
    for (const [json, paths] of cases) {
      const response = await api.call('POST', '/tasks', { json });
      assert.equal(response.status, 400, JSON.stringify(json));
      assert.deepEqual(
        response.body.errors.map((e: { path: string }) => e.path).sort(),
        paths.sort(),
        JSON.stringify(response.body),
      );
    }
    const notJson = await api.call('POST', '/tasks', {
      headers: { 'content-type': 'application/json' },
      json: undefined,
      form: undefined,
    });
    assert.equal(notJson.status, 400);
    assert.equal((await api.call('GET', '/tasks')).body.data.length, 0, 'nothing was written');
  });
});

describe(`list pagination on ${testDialect}`, () => {
  it('walks 1,000 rows page by page, each row exactly once and in order', async (t) => {
    const api = await startApiFixture(t);
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
    const created: string[] = [];
    for (let i = 0; i < 1000; i++) {
      const result = await createTask(deps, api.org.workspaceId, { title: `task ${i}` }, OPERATOR_SOURCE);
      assert.ok(result.ok);
      created.push(result.value.id);
      if (i % 7 === 0) api.runtime.clock.advance(1);
    }
    const { items, pages } = await walkPages<Task>(api, '/tasks?limit=200');
    assert.equal(pages, 5);
    assert.deepEqual(
      items.map((task) => task.id),
      [...created].sort(),
    );
    assert.equal(new Set(items.map((task) => task.id)).size, 1000);

    const small = await walkPages<Task>(api, '/tasks?limit=33&status=open');
    assert.deepEqual(
      small.items.map((task) => task.id),
      [...created].sort(),
    );
    assert.equal(small.pages, 31);
    const first = await api.call('GET', '/tasks');
    assert.equal(first.body.data.length, 50, 'the default page size is 50');
  });

  it('refuses page sizes outside 1-200 or not written as whole decimal numbers, and cursors of another list, filter or organization', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    for (let i = 0; i < 3; i++) await api.call('POST', '/tasks', { json: { title: `t${i}` } });
    for (const limit of ['0', '201', 'ten', '-5', '1.5', '2.9', '0x2', '1e1', '%202', '']) {
      const response = await api.call('GET', `/tasks?limit=${limit}`);
      assert.deepEqual([response.status, response.body.errors[0].path], [400, 'querystring/limit'], limit);
    }
    const { next_cursor: cursor } = (await api.call('GET', '/tasks?limit=1')).body;
    assert.equal(typeof cursor, 'string');
    const misuse = [
      `/tasks?limit=1&status=open&cursor=${cursor}`,
      `/people?cursor=${cursor}`,
      `/tasks?cursor=${cursor.slice(0, -2)}`,
      '/tasks?cursor=not-a-cursor',
    ];
    for (const path of misuse) {
      const response = await api.call('GET', path);
      assert.deepEqual([response.status, response.body.code], [400, 'invalid_cursor'], path);
    }
    const foreign = await api.call('GET', `/tasks?limit=1&cursor=${cursor}`, { key: other.key });
    assert.deepEqual([foreign.status, foreign.body.code], [400, 'invalid_cursor']);
    const next = await api.call('GET', `/tasks?limit=1&cursor=${cursor}`);
    assert.equal(next.body.data[0].title, 't1');
  });
});
