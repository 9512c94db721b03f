// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findPersonByEmail } from '../../src/compliance/index.ts';
import { publishedEvents, startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

const ADA = { email: 'Ada@Example.com', name: 'Ada Lovelace', title: 'CTO', department: 'Engineering' };

describe(`people on ${testDialect}`, () => {
  it('find a person by email, case-insensitively, only in their own workspace', async (t) => {
    const api = await startApiFixture(t);
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
    const ada = (await api.call('POST', '/people', { json: ADA })).body;
    assert.equal((await findPersonByEmail(deps, api.org.workspaceId, 'ADA@example.COM'))?.id, ada.id);
    assert.equal(await findPersonByEmail(deps, api.org.workspaceId, 'grace@example.com'), undefined);
    const other = await api.createOrganization();
    assert.equal(await findPersonByEmail(deps, other.workspaceId, 'ada@example.com'), undefined);
  });

  it('upsert by email: 201 once, then the same body twice changes nothing', async (t) => {
    const api = await startApiFixture(t);
    const created = await api.call('POST', '/people', { json: ADA });
    assert.equal(created.status, 201);
    assert.deepEqual(
      [created.body.email, created.body.name, created.body.employment_status],
      ['ada@example.com', 'Ada Lovelace', 'current'],
    );
    api.runtime.clock.advance(1000);
    const repeated = await api.call('POST', '/people', { json: ADA });
    assert.equal(repeated.status, 200);
    assert.deepEqual(repeated.body, created.body, 'same person, same updated_at');
    const differentCase = await api.call('POST', '/people', { json: { ...ADA, email: 'ada@EXAMPLE.com' } });
    assert.deepEqual([differentCase.status, differentCase.body.id], [200, created.body.id]);

    const changed = await api.call('POST', '/people', { json: { email: 'ada@example.com', title: 'CEO' } });
    assert.equal(changed.status, 200);
    assert.deepEqual(
      [changed.body.id, changed.body.title, changed.body.name],
      [created.body.id, 'CEO', 'Ada Lovelace'],
    );
    assert.equal(changed.body.updated_at, '2026-03-01T12:00:01.000Z');

    const events = await api.runtime.database.db
      .selectFrom('webhook_events')
      .select('type')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['person.created', 'person.updated'],
    );
    assert.equal((await api.call('GET', '/people')).body.data.length, 1);
  });

  it('create one person when the same new email is posted concurrently', async (t) => {
    const api = await startApiFixture(t);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => api.call('POST', '/people', { json: { email: 'race@example.com' } })),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    assert.equal(new Set(answers.map((a) => a.body.id)).size, 1);
    const events = await api.runtime.database.db.selectFrom('webhook_events').select('type').execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['person.created'],
    );
  });

  it('search by name or email, filter by employment status, oldest first', async (t) => {
    const api = await startApiFixture(t);
    const people = [
      { email: 'ada@example.com', name: 'Ada Lovelace' },
      { email: 'grace@example.com', name: 'Grace Hopper', employment_status: 'former' },
      { email: 'alan@turing.example', name: 'Alan Turing', employment_status: 'contractor' },
    ];
    for (const json of people) await api.call('POST', '/people', { json });
    const emails = async (query: string) =>
      (await api.call('GET', `/people${query}`)).body.data.map((p: { email: string }) => p.email);
    assert.deepEqual(
      await emails(''),
      people.map((p) => p.email),
    );
    assert.deepEqual(await emails('?q=HOPPER'), ['grace@example.com']);
    assert.deepEqual(await emails('?q=turing.ex'), ['alan@turing.example']);
    assert.deepEqual(
      await emails('?q=a'),
      people.map((p) => p.email),
    );
    assert.deepEqual(await emails('?employment_status=former'), ['grace@example.com']);
  });

  it('patch a person; another person\u2019s email is a 409', async (t) => {
    const api = await startApiFixture(t);
    const ada = (await api.call('POST', '/people', { json: ADA })).body;
    await api.call('POST', '/people', { json: { email: 'grace@example.com' } });
    const moved = await api.call('PATCH', `/people/${ada.id}`, {
      json: { department: null, employment_status: 'former' },
    });
    assert.deepEqual(
      [moved.status, moved.body.department, moved.body.employment_status],
      [200, null, 'former'],
    );
    const taken = await api.call('PATCH', `/people/${ada.id}`, { json: { email: 'GRACE@example.com' } });
    assert.deepEqual(
      [taken.status, taken.body.code, taken.body.errors[0].path],
      [409, 'conflict', 'body/email'],
    );
    const renamed = await api.call('PATCH', `/people/${ada.id}`, { json: { email: 'ada@lovelace.example' } });
    assert.equal(renamed.body.email, 'ada@lovelace.example');
  });

  it('let one of many concurrent changes to the same new email win; the others are 409', async (t) => {
    const api = await startApiFixture(t);
    const people = await Promise.all(
      Array.from(
        { length: 8 },
        async (_, i) => (await api.call('POST', '/people', { json: { email: `p${i}@example.com` } })).body,
      ),
    );
    const answers = await Promise.all(
      people.map((person) =>
        api.call('PATCH', `/people/${person.id}`, { json: { email: 'shared@example.com' } }),
      ),
    );
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [200, 409, 409, 409, 409, 409, 409, 409]);
    const holders = await api.call('GET', '/people?q=shared');
    assert.equal(holders.body.data.length, 1);
  });

  it('refuse invalid people with 400', async (t) => {
    const api = await startApiFixture(t);
    for (const [json, path] of [
      [{ name: 'No email' }, 'body/email'],
      [{ email: 'not-an-email' }, 'body/email'],
      [{ email: 'a@b.co', employment_status: 'retired' }, 'body/employment_status'],
      [{ email: 'a@b.co', name: 'x'.repeat(201) }, 'body/name'],
    ] as const) {
      const response = await api.call('POST', '/people', { json });
      assert.deepEqual([response.status, response.body.errors[0].path], [400, path], JSON.stringify(json));
    }
    const person = (await api.call('POST', '/people', { json: { email: 'a@b.co' } })).body;
    assert.equal((await api.call('PATCH', `/people/${person.id}`, { json: {} })).status, 400);
  });

  it('keep directories apart: the same email in two organizations is two people', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const mine = (await api.call('POST', '/people', { json: ADA })).body;
    const theirs = await api.call('POST', '/people', { key: other.key, json: { ...ADA, title: 'Advisor' } });
    assert.equal(theirs.status, 201);
    assert.notEqual(theirs.body.id, mine.id);
    assert.equal((await api.call('GET', `/people/${theirs.body.id}`)).status, 404);
    assert.equal((await api.call('PATCH', `/people/${theirs.body.id}`, { json: { name: 'x' } })).status, 404);
    assert.deepEqual(
      (await api.call('GET', '/people')).body.data.map((p: { id: string }) => p.id),
      [mine.id],
    );
    assert.equal((await api.call('GET', `/people/${mine.id}`)).body.title, 'CTO');
  });

  it('record every change in the audit log with the API key as the actor and what changed', async (t) => {
    const api = await startApiFixture(t);
    const ada = (await api.call('POST', '/people', { json: ADA })).body;
    await api.call('POST', '/people', { json: ADA });
    await api.call('POST', '/people', { json: { email: ADA.email, title: 'CEO' } });
    await api.call('PATCH', `/people/${ada.id}`, { json: { department: 'Board' } });
    const events = (await api.call('GET', '/audit-events')).body.data.filter((event: { action: string }) =>
      event.action.startsWith('person.'),
    );
    assert.deepEqual(
      events.map((event: { action: string; target: { id: string }; changes: unknown }) => [
        event.action,
        event.target.id,
        event.changes,
      ]),
      [
        ['person.updated', ada.id, { department: { from: 'Engineering', to: 'Board' } }],
        ['person.updated', ada.id, { title: { from: 'CTO', to: 'CEO' } }],
        ['person.created', ada.id, null],
      ],
    );
    assert.ok(
      events.every((event: { actor: { api_key_id: string } }) => event.actor.api_key_id === api.org.keyId),
    );
  });

  it('mark a person as left: former with a left_on date, published as person.left', async (t) => {
    const api = await startApiFixture(t);
    const ada = (await api.call('POST', '/people', { json: ADA })).body;
    assert.equal(ada.left_on, null);
    const left = await api.call('PATCH', `/people/${ada.id}`, { json: { left_on: '2026-02-20' } });
    assert.deepEqual(
      [left.status, left.body.employment_status, left.body.left_on],
      [200, 'former', '2026-02-20'],
      'a date alone marks the person as left',
    );
    const corrected = await api.call('PATCH', `/people/${ada.id}`, { json: { left_on: '2026-02-21' } });
    assert.equal(corrected.body.left_on, '2026-02-21');
    const back = await api.call('PATCH', `/people/${ada.id}`, { json: { employment_status: 'current' } });
    assert.deepEqual([back.body.employment_status, back.body.left_on], ['current', null]);
    const today = await api.call('PATCH', `/people/${ada.id}`, { json: { employment_status: 'former' } });
    assert.deepEqual([today.body.employment_status, today.body.left_on], ['former', '2026-03-01']);
    const unknownDate = await api.call('POST', '/people', {
      json: { email: 'old@example.com', employment_status: 'former' },
    });
    assert.deepEqual([unknownDate.status, unknownDate.body.left_on], [201, null]);
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.left_on]),
      [
        ['person.created', null],
        ['person.left', '2026-02-20'],
        ['person.updated', '2026-02-21'],
        ['person.updated', null],
        ['person.left', '2026-03-01'],
        ['person.created', null],
      ],
    );
    const audit = await api.call('GET', '/audit-events?action=person.left');
    assert.deepEqual(audit.body.data[1].changes, {
      employment_status: { from: 'current', to: 'former' },
      left_on: { from: null, to: '2026-02-20' },
    });
    for (const [method, path, json] of [
      ['PATCH', `/people/${ada.id}`, { employment_status: 'current', left_on: '2026-02-20' }],
      [
        'POST',
        '/people',
        { email: 'new@example.com', employment_status: 'contractor', left_on: '2026-02-20' },
      ],
    ] as const) {
      const refused = await api.call(method, path, { json });
      assert.deepEqual(
        [refused.status, refused.body.code, refused.body.errors[0].path],
        [409, 'conflict', 'body/left_on'],
        JSON.stringify(json),
      );
    }
    const invalid = await api.call('PATCH', `/people/${ada.id}`, { json: { left_on: '2026-02-30' } });
    assert.deepEqual([invalid.status, invalid.body.errors[0].path], [400, 'body/left_on']);
    assert.equal((await api.call('GET', '/people?q=new@')).body.data.length, 0, 'nothing was written');
  });
});
