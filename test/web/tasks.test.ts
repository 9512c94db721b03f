// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, signedInOwner, webClient } from '../helpers/web.ts';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** The task titles a list page shows, in order. */
function titles(body: string): string[] {
  return [...body.matchAll(/<th scope="row" data-label="Task"><a href="[^"]+">([^<]+)<\/a>/g)].map(
    (m) => m[1] ?? '',
  );
}

describe(`the Tasks pages on ${testDialect}`, () => {
  it('creates, edits, assigns, completes and reopens a task: the API sees it, and the history, audit log and webhooks tell who', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const ada = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada Lovelace' })).body;
    const control = (await owner.api('GET', '/controls?q=A.5.15')).body.data[0];

    const empty = await client.get(`${page}/tasks`);
    assert.equal(empty.status, 200);
    assert.match(empty.body, /No tasks yet/);
    const form = await client.get(`${page}/tasks/new`);
    assert.match(form.body, /<option value="[^"]+">A\.5\.15 Access control<\/option>/);

    const created = await client.post(`${page}/tasks`, {
      title: 'Review admin access',
      description: 'Quarterly',
      due_date: '2026-03-10',
      assignee_id: ada.id,
      control_id: control.id,
    });
    assert.equal(created.status, 303, created.body);
    const taskUrl = created.location?.split('?')[0] ?? '';
    const taskId = taskUrl.split('/').at(-1) ?? '';
    const shown = await client.get(created.location ?? '');
    assert.match(shown.body, /Task created\./);
    assert.match(shown.body, /Ada Lovelace/);
    const viaApi = (await owner.api('GET', `/tasks/${taskId}`)).body;
    assert.deepEqual(
      [viaApi.title, viaApi.due_date, viaApi.assignee_id, viaApi.control_id],
      ['Review admin access', '2026-03-10', ada.id, control.id],
    );

    const edited = await client.post(taskUrl, {
      title: 'Review admin and prod access',
      description: 'Quarterly',
      due_date: '2026-02-20',
      assignee_id: '',
      control_id: control.id,
    });
    assert.equal(edited.status, 303, edited.body);
    assert.equal((await client.post(`${taskUrl}/complete`, {})).status, 303);
    assert.equal((await owner.api('GET', `/tasks/${taskId}`)).body.status, 'completed');
    assert.equal((await client.post(`${taskUrl}/reopen`, {})).status, 303);
    assert.equal((await owner.api('GET', `/tasks/${taskId}`)).body.status, 'open');
    await owner.api('PATCH', `/tasks/${taskId}`, { description: 'Quarterly, with the CTO' });

    const history = (await client.get(taskUrl)).body;
    for (const line of ['Task created', 'Task changed', 'Task completed', 'Task reopened'])
      assert.match(history, new RegExp(`<strong>${line}</strong> by owner@example\\.com`));
    assert.match(history, /<strong>Task changed<\/strong> by API key/);
    assert.match(history, /due date: <del>2026-03-10<\/del> → <ins>2026-02-20<\/ins>/);
    assert.match(history, /assignee: <del>Ada Lovelace<\/del> → <ins>—<\/ins>/);

    const audit = (await owner.api('GET', `/audit-events?target_id=${taskId}`)).body.data;
    assert.deepEqual(
      audit.map((event: { action: string; actor: { label: string } }) => [event.action, event.actor.label]),
      [
        ['task.updated', audit[0].actor.label],
        ['task.reopened', 'owner@example.com'],
        ['task.completed', 'owner@example.com'],
        ['task.updated', 'owner@example.com'],
        ['task.created', 'owner@example.com'],
      ],
    );
    const events = await owner.fixture.runtime.database.db
      .selectFrom('webhook_events')
      .select('type')
      .where('workspace_id', '=', owner.workspaceId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((event) => event.type).filter((type) => type.startsWith('task.')),
      ['task.created', 'task.updated', 'task.completed', 'task.reopened', 'task.updated'],
    );
  });

  it('lists open, completed, mine and overdue tasks, searches, pages and exports them as CSV', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    const me = (await owner.api('POST', '/people', { email: 'Owner@Example.com', name: 'Me' })).body;
    const today = fixture.runtime.clock.now().toISOString().slice(0, 10);
    const make = async (body: object) => (await owner.api('POST', '/tasks', body)).body;
    await make({ title: 'Mine and late', assignee_id: me.id, due_date: '2020-01-01' });
    await make({ title: 'Due today', due_date: today });
    const done = await make({ title: '=HYPERLINK("https://evil.example")', due_date: '2020-01-01' });
    await owner.api('PATCH', `/tasks/${done.id}`, { status: 'completed' });

    const list = async (query: string) => titles((await client.get(`${page}/tasks${query}`)).body);
    assert.deepEqual(await list(''), [
      'Mine and late',
      'Due today',
      '=HYPERLINK(&quot;https://evil.example&quot;)',
    ]);
    assert.deepEqual(await list('?show=open'), ['Mine and late', 'Due today']);
    assert.deepEqual(await list('?show=completed'), ['=HYPERLINK(&quot;https://evil.example&quot;)']);
    assert.deepEqual(await list('?show=mine'), ['Mine and late']);
    assert.deepEqual(await list('?show=overdue'), ['Mine and late']);
    assert.deepEqual(await list('?q=today'), ['Due today']);
    assert.match((await client.get(`${page}/tasks?show=overdue`)).body, /Overdue<\/span>/);

    const csv = await client.get(`${page}/tasks.csv?show=completed`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    const lines = csv.body.trim().split('\r\n');
    assert.equal(lines[0], 'title,status,due_date,assignee_id,control_id,description,completed_at,id');
    assert.equal(lines.length, 2);
    assert.match(lines[1] ?? '', /^"'=HYPERLINK\(""https:\/\/evil\.example""\)",completed,/);

    for (let i = 0; i < 55; i++) await make({ title: `Bulk ${i}` });
    const first = await client.get(`${page}/tasks`);
    assert.equal(titles(first.body).length, 50);
    const next = /<a href="([^"]+)" rel="next">/.exec(first.body)?.[1]?.replaceAll('&amp;', '&') ?? '';
    assert.equal(titles((await client.get(next)).body).length, 8);

    for (const bad of ['show=late', `q=${'x'.repeat(201)}`, 'show=open&show=mine']) {
      const refused = await client.get(`${page}/tasks?${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.equal(errorCodeOf(refused.body), 'invalid_filter', bad);
    }
    const forged = await client.get(`${page}/tasks?cursor=bm9wZQ`);
    assert.deepEqual([forged.status, errorCodeOf(forged.body)], [400, 'invalid_cursor']);
  });

  it('answers bad input with the form again, and another workspace’s tasks with 404', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    await client.get(`${page}/tasks/new`);
    const noTitle = await client.post(`${page}/tasks`, { title: '  ', due_date: 'tomorrow' });
    assert.equal(noTitle.status, 400);
    assert.match(noTitle.body, /Give the task a title/);
    assert.match(noTitle.body, /Enter the due date as a date/);
    const unknownPerson = await client.post(`${page}/tasks`, { title: 'x', assignee_id: 'per_nobody' });
    assert.equal(unknownPerson.status, 400);
    assert.match(unknownPerson.body, /Choose the assignee from the list/);
    const tooLong = await client.post(`${page}/tasks`, { title: 'x'.repeat(2000) });
    assert.equal(tooLong.status, 400);
    assert.equal((await owner.api('GET', '/tasks')).body.data.length, 0, 'nothing was created');

    const task = (await owner.api('POST', '/tasks', { title: 'Ours' })).body;
    const other = await fixture.provision({ email: 'other@example.com' });
    const stranger = await acceptAsNewAccount(fixture.runtime.app, other.invitationPath);
    assert.equal((await stranger.get(`${page}/tasks/${task.id}`)).status, 404);
    assert.equal((await stranger.get(`/w/${other.workspaceId}/tasks/${task.id}`)).status, 404);
    assert.equal((await stranger.post(`/w/${other.workspaceId}/tasks/${task.id}/complete`, {})).status, 404);
    assert.equal((await owner.api('GET', `/tasks/${task.id}`)).body.status, 'open');
    const signedOut = await webClient(fixture.runtime.app).get(`${page}/tasks`);
    assert.equal(signedOut.status, 303);
    assert.match(signedOut.location ?? '', /^\/sign-in\?next=/);
  });
});
