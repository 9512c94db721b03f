// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR_SOURCE, userActor } from '../../src/audit/index.ts';
import { acknowledgePolicy, approvePolicy, findPolicyByKey } from '../../src/compliance/index.ts';
import { type ApiFixture, publishedEvents, startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Policy {
  id: string;
  key: string;
  title: string;
}

const ACCESS = {
  key: 'access-control',
  title: 'Access Control Policy',
  version: '1.0',
  status: 'approved',
  summary: 'Least privilege, reviewed quarterly.',
  approved_at: '2026-02-15',
};

async function keys(api: ApiFixture, query: string): Promise<string[]> {
  const response = await api.call('GET', `/policies${query}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.data.map((policy: Policy) => policy.key);
}

describe(`policies on ${testDialect}`, () => {
  it('finds a policy by its key, only in its own workspace', async (t) => {
    const api = await startApiFixture(t);
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
    const created = (await api.call('POST', '/policies', { json: ACCESS })).body;
    assert.equal((await findPolicyByKey(deps, api.org.workspaceId, 'access-control'))?.id, created.id);
    assert.equal(await findPolicyByKey(deps, api.org.workspaceId, 'clean-desk'), undefined);
    const other = await api.createOrganization();
    assert.equal(await findPolicyByKey(deps, other.workspaceId, 'access-control'), undefined);
  });

  it('POST is idempotent on the key: created once, then unchanged, then updated', async (t) => {
    const api = await startApiFixture(t);
    const created = await api.call('POST', '/policies', { json: ACCESS });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^pol_[0-9a-z]{26}$/);
    assert.deepEqual(
      { ...created.body, id: undefined },
      {
        id: undefined,
        ...ACCESS,
        body: '',
        created_at: '2026-03-01T12:00:00.000Z',
        updated_at: '2026-03-01T12:00:00.000Z',
      },
    );
    api.runtime.clock.advance(60_000);
    const repeated = await api.call('POST', '/policies', { json: ACCESS });
    assert.equal(repeated.status, 200);
    assert.deepEqual(repeated.body, created.body, 'same policy, same updated_at');

    api.runtime.clock.advance(60_000);
    const revised = await api.call('POST', '/policies', {
      json: { key: ACCESS.key, title: ACCESS.title, version: '1.1', status: 'published' },
    });
    assert.equal(revised.status, 200);
    assert.deepEqual(
      { ...revised.body },
      {
        ...created.body,
        version: '1.1',
        status: 'published',
        updated_at: '2026-03-01T12:02:00.000Z',
      },
      'the fields not sent stay',
    );
    assert.deepEqual(await publishedEvents(api), [
      { type: 'policy.created', data: created.body },
      { type: 'policy.updated', data: revised.body },
    ]);
    assert.deepEqual((await api.call('GET', '/policies')).body.data, [revised.body]);
    assert.deepEqual((await api.call('GET', `/policies/${created.body.id}`)).body, revised.body);
  });

  it('start as a draft of version 1.0 when only a key and title are sent', async (t) => {
    const api = await startApiFixture(t);
    const draft = await api.call('POST', '/policies', { json: { key: 'backup', title: 'Backup Policy' } });
    assert.equal(draft.status, 201);
    assert.deepEqual(
      [draft.body.version, draft.body.status, draft.body.summary, draft.body.approved_at],
      ['1.0', 'draft', null, null],
    );
  });

  it('create one policy when the same new key is posted concurrently', async (t) => {
    const api = await startApiFixture(t);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        api.call('POST', '/policies', { json: { key: 'incident-response', title: 'Incident Response' } }),
      ),
    );
    assert.deepEqual(
      answers.map((answer) => answer.status).sort(),
      [200, 200, 200, 200, 200, 200, 200, 200, 200, 201],
    );
    assert.equal(new Set(answers.map((answer) => answer.body.id)).size, 1);
    const rows = await api.runtime.database.db.selectFrom('policies').select('id').execute();
    assert.equal(rows.length, 1);
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.id]),
      [['policy.created', rows[0]?.id]],
    );
  });

  it('refuse invalid policies with 400 naming each field', async (t) => {
    const api = await startApiFixture(t);
    const cases: [unknown, string[]][] = [
      [{ title: 'No key' }, ['body/key']],
      [{ key: 'no-title' }, ['body/title']],
      [{ key: 'Access-Control', title: 'x' }, ['body/key']],
      [{ key: 'access control', title: 'x' }, ['body/key']],
      [{ key: 'access_control', title: 'x' }, ['body/key']],
      [{ key: '-access', title: 'x' }, ['body/key']],
      [{ key: 'access--control', title: 'x' }, ['body/key']],
      [{ key: 'x'.repeat(101), title: 'x' }, ['body/key']],
      [{ key: 'ok', title: 'x', version: 'v1' }, ['body/version']],
      [{ key: 'ok', title: 'x', version: '1.' }, ['body/version']],
      [{ key: 'ok', title: 'x', status: 'deleted' }, ['body/status']],
      [{ key: 'ok', title: 'x', approved_at: '2026-02-30' }, ['body/approved_at']],
      [{ key: 'ok', title: 'x', owner: 'me' }, ['body/owner']],
    ];
    for (const [json, paths] of cases) {
      const response = await api.call('POST', '/policies', { json });
      assert.equal(response.status, 400, JSON.stringify(json));
      assert.deepEqual(
        response.body.errors.map((e: { path: string }) => e.path),
        paths,
        JSON.stringify(response.body),
      );
    }
    assert.equal((await api.call('GET', '/policies')).body.data.length, 0, 'nothing was written');
    const policy = (await api.call('POST', '/policies', { json: { key: 'iso-27001-a5', title: 'x' } })).body;
    for (const [json, path] of [
      [{}, 'body'],
      [{ key: 'Bad Key' }, 'body/key'],
      [{ id: 'pol_other' }, 'body/id'],
    ] as const) {
      const response = await api.call('PATCH', `/policies/${policy.id}`, { json });
      assert.deepEqual([response.status, response.body.errors[0].path], [400, path], JSON.stringify(json));
    }
  });

  it('patch a policy: archive it, rename its key unless another policy has it', async (t) => {
    const api = await startApiFixture(t);
    const access = (await api.call('POST', '/policies', { json: ACCESS })).body;
    await api.call('POST', '/policies', { json: { key: 'backup', title: 'Backup Policy' } });
    const archived = await api.call('PATCH', `/policies/${access.id}`, {
      json: { status: 'archived', approved_at: null },
    });
    assert.deepEqual(
      [archived.status, archived.body.status, archived.body.approved_at],
      [200, 'archived', null],
    );
    const taken = await api.call('PATCH', `/policies/${access.id}`, {
      json: { key: 'backup', title: 'New' },
    });
    assert.deepEqual(
      [taken.status, taken.body.code, taken.body.errors[0].path],
      [409, 'conflict', 'body/key'],
    );
    assert.deepEqual(
      (await api.call('GET', `/policies/${access.id}`)).body,
      archived.body,
      'nothing changed',
    );
    const renamed = await api.call('PATCH', `/policies/${access.id}`, { json: { key: 'access-management' } });
    assert.deepEqual([renamed.status, renamed.body.key], [200, 'access-management']);
    const reposted = await api.call('POST', '/policies', { json: { key: 'access-control', title: 'Fresh' } });
    assert.equal(reposted.status, 201, 'the old key is free again');
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.key, event.data.status]),
      [
        ['policy.created', 'access-control', 'approved'],
        ['policy.created', 'backup', 'draft'],
        ['policy.updated', 'access-control', 'archived'],
        ['policy.updated', 'access-management', 'archived'],
        ['policy.created', 'access-control', 'draft'],
      ],
    );
    const racers = await Promise.all(
      ['racer-a', 'racer-b'].map(async (key) => {
        const policy = (await api.call('POST', '/policies', { json: { key, title: key } })).body;
        return api.call('PATCH', `/policies/${policy.id}`, { json: { key: 'finish-line' } });
      }),
    );
    assert.deepEqual(
      racers.map((answer) => answer.status).sort(),
      [200, 409],
      'two concurrent renames to one key: one wins, the other is a conflict',
    );
    assert.deepEqual(await keys(api, '?q=finish'), ['finish-line']);
    const deleted = await api.call('DELETE', `/policies/${access.id}`);
    assert.equal(deleted.status, 405, 'policies are archived, not deleted');
  });

  it('search key and title literally, filter by status, oldest first', async (t) => {
    const api = await startApiFixture(t);
    const policies = [
      { key: 'access-control', title: 'Access Control Policy', status: 'published' },
      { key: 'backup', title: 'Backup (100% of data)' },
      { key: 'clean-desk', title: 'Clean_Desk rules', status: 'published' },
      { key: 'cryptography', title: 'Use of Cryptography' },
    ];
    for (const json of policies) {
      assert.equal((await api.call('POST', '/policies', { json })).status, 201);
      api.runtime.clock.advance(1);
    }
    assert.deepEqual(
      await keys(api, ''),
      policies.map((policy) => policy.key),
    );
    assert.deepEqual(await keys(api, '?q=CONTROL'), ['access-control']);
    assert.deepEqual(await keys(api, '?q=desk'), ['clean-desk']);
    assert.deepEqual(await keys(api, '?q=crypto'), ['cryptography']);
    assert.deepEqual(await keys(api, `?q=${encodeURIComponent('100%')}`), ['backup']);
    assert.deepEqual(await keys(api, '?q=%25'), ['backup']);
    assert.deepEqual(await keys(api, '?q=_'), ['clean-desk']);
    assert.deepEqual(await keys(api, '?status=published'), ['access-control', 'clean-desk']);
    assert.deepEqual(await keys(api, '?status=draft&q=c'), ['backup', 'cryptography']);
    const { items, pages } = await walkPages<Policy>(api, '/policies?limit=3');
    assert.deepEqual([items.map((policy) => policy.key), pages], [policies.map((policy) => policy.key), 2]);
  });

  it('keep organizations apart: the same key in two organizations is two policies', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const mine = (await api.call('POST', '/policies', { json: ACCESS })).body;
    const theirs = await api.call('POST', '/policies', {
      key: other.key,
      json: { key: ACCESS.key, title: 'Their policy' },
    });
    assert.equal(theirs.status, 201);
    assert.notEqual(theirs.body.id, mine.id);
    assert.deepEqual(
      (await api.call('GET', '/policies', { key: other.key })).body.data.map((p: Policy) => p.id),
      [theirs.body.id],
    );
    for (const [method, json] of [
      ['GET', undefined],
      ['PATCH', { status: 'archived' }],
    ] as const) {
      const response = await api.call(method, `/policies/${mine.id}`, { key: other.key, json });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], method);
    }
    const renamed = await api.call('PATCH', `/policies/${theirs.body.id}`, {
      key: other.key,
      json: { key: 'their-access' },
    });
    assert.equal(renamed.status, 200);
    assert.deepEqual((await api.call('GET', `/policies/${mine.id}`)).body, mine, 'untouched');
    assert.deepEqual(
      (await api.call('GET', '/policies')).body.data.map((p: Policy) => p.id),
      [mine.id],
    );
  });

  it('keep versions: edits go to the draft, approval numbers it for good', async (t) => {
    const api = await startApiFixture(t);
    const created = await api.call('POST', '/policies', {
      json: { key: 'backup', title: 'Backup Policy', body: '# Backup\n\nDaily.' },
    });
    assert.deepEqual(
      [created.body.body, created.body.status, created.body.version],
      ['# Backup\n\nDaily.', 'draft', '1.0'],
    );
    const id = created.body.id;
    await api.call('PATCH', `/policies/${id}`, { json: { body: '# Backup\n\nHourly.' } });
    const drafts = await api.call('GET', `/policies/${id}/versions`);
    assert.deepEqual(
      drafts.body.data.map((v: { number: number; status: string }) => [v.number, v.status]),
      [[1, 'draft']],
      'changes while in draft update the one draft',
    );
    api.runtime.clock.advance(60_000);
    const approved = await api.call('POST', `/policies/${id}/approve`);
    assert.deepEqual(
      [approved.status, approved.body.version, approved.body.status, approved.body.approved_at],
      [200, '1', 'approved', '2026-03-01'],
    );
    const again = await api.call('POST', `/policies/${id}/approve`);
    assert.deepEqual([again.status, again.body.code], [409, 'nothing_to_approve']);

    const unchanged = await api.call('PATCH', `/policies/${id}`, { json: { body: '# Backup\n\nHourly.' } });
    assert.equal(unchanged.body.status, 'approved', 'the same text makes no draft');
    const edited = await api.call('PATCH', `/policies/${id}`, {
      json: { title: 'Backup and Restore Policy' },
    });
    assert.deepEqual([edited.body.status, edited.body.version], ['draft', '1']);
    const second = await api.call('POST', `/policies/${id}/approve`);
    assert.deepEqual([second.body.version, second.body.status], ['2', 'approved']);

    const versions = (await api.call('GET', `/policies/${id}/versions?limit=1`)).body;
    assert.equal(versions.data[0].number, 1);
    assert.ok(versions.next_cursor);
    const first = await api.call('GET', `/policies/${id}/versions/1`);
    assert.deepEqual(
      [first.body.status, first.body.title, first.body.body, first.body.approved_at],
      ['approved', 'Backup Policy', '# Backup\n\nHourly.', '2026-03-01T12:01:00.000Z'],
      'approved versions keep their text',
    );
    assert.match(first.body.approved_by, /^API key/);
    assert.equal(
      (await api.call('GET', `/policies/${id}/versions/2`)).body.title,
      'Backup and Restore Policy',
    );
    assert.deepEqual((await api.call('GET', `/policies/${id}/versions/3`)).body.code, 'not_found');
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.version, event.data.status]),
      [
        ['policy.created', '1.0', 'draft'],
        ['policy.updated', '1.0', 'draft'],
        ['policy.approved', '1', 'approved'],
        ['policy.updated', '1', 'draft'],
        ['policy.approved', '2', 'approved'],
      ],
    );
    const audit = (await api.call('GET', '/audit-events?action=policy.updated')).body.data;
    assert.deepEqual(audit[1].changes, { body: { from: '16 characters', to: '17 characters' } });
  });

  it('approve from the app only as an owner or admin; members acknowledge the approved version', async (t) => {
    const api = await startApiFixture(t);
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
    const workspaceId = api.org.workspaceId;
    const policy = (await api.call('POST', '/policies', { json: { key: 'clean-desk', title: 'Clean Desk' } }))
      .body;
    const source = { actor: userActor({ id: 'usr_member', email: 'member@example.com' }) };
    assert.deepEqual(await acknowledgePolicy(deps, workspaceId, policy.id, 'usr_member', source), {
      ok: false,
      error: { code: 'not_approved' },
    });
    const empty = await api.call('GET', `/policies/${policy.id}/acknowledgements`);
    assert.deepEqual([empty.status, empty.body.version, empty.body.data], [200, null, []]);
    const refused = await approvePolicy(
      deps,
      workspaceId,
      policy.id,
      { kind: 'member', role: 'member' },
      source,
    );
    assert.deepEqual(refused, { ok: false, error: { code: 'not_allowed' } });
    const admin = { actor: userActor({ id: 'usr_admin', email: 'admin@example.com' }) };
    const approved = await approvePolicy(
      deps,
      workspaceId,
      policy.id,
      { kind: 'member', role: 'admin' },
      admin,
    );
    assert.ok(approved.ok);
    assert.equal(
      (await api.call('GET', `/policies/${policy.id}/versions/1`)).body.approved_by,
      'admin@example.com',
    );

    api.runtime.clock.advance(1000);
    const acknowledged = await acknowledgePolicy(deps, workspaceId, policy.id, 'usr_member', source);
    assert.deepEqual(acknowledged, {
      ok: true,
      value: {
        policy_id: policy.id,
        version: 1,
        user_id: 'usr_member',
        acknowledged_at: '2026-03-01T12:00:01.000Z',
      },
    });
    api.runtime.clock.advance(1000);
    assert.deepEqual(
      await acknowledgePolicy(deps, workspaceId, policy.id, 'usr_member', source),
      acknowledged,
    );
    const listed = await api.call('GET', `/policies/${policy.id}/acknowledgements`);
    assert.deepEqual([listed.body.version, listed.body.data], [1, [acknowledged.value]]);
    assert.ok(Array.isArray(listed.body.pending_user_ids));
    assert.deepEqual(
      (await publishedEvents(api))
        .filter((event) => event.type === 'policy.acknowledged')
        .map((event) => event.data),
      [acknowledged.value],
      'acknowledging twice publishes once',
    );
    const audit = (await api.call('GET', '/audit-events?action=policy.acknowledged')).body.data;
    assert.deepEqual(
      audit.map((event: { actor: { user_id: string }; target: { id: string } }) => [
        event.actor.user_id,
        event.target.id,
      ]),
      [['usr_member', policy.id]],
    );

    await api.call('PATCH', `/policies/${policy.id}`, { json: { body: 'Clear your desk.' } });
    await approvePolicy(deps, workspaceId, policy.id, { kind: 'api_key' }, OPERATOR_SOURCE);
    const renewed = await api.call('GET', `/policies/${policy.id}/acknowledgements`);
    assert.deepEqual(
      [renewed.body.version, renewed.body.data],
      [2, []],
      'a new version needs new acknowledgements',
    );
    assert.equal(
      (await api.call('POST', `/policies/${policy.id}/acknowledgements`)).status,
      405,
      'API keys cannot acknowledge',
    );
  });

  it('answer 404 for another workspace and 400 for bad input on versions', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const mine = (await api.call('POST', '/policies', { json: { key: 'mine', title: 'Mine' } })).body;
    for (const [method, path] of [
      ['POST', `/policies/${mine.id}/approve`],
      ['GET', `/policies/${mine.id}/versions`],
      ['GET', `/policies/${mine.id}/versions/1`],
      ['GET', `/policies/${mine.id}/acknowledgements`],
    ] as const) {
      const response = await api.call(method, path, { key: other.key });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], path);
    }
    assert.equal(
      (await api.call('GET', `/policies/${mine.id}`)).body.status,
      'draft',
      'not approved by them',
    );
    for (const path of [
      `/policies/${mine.id}/versions/0`,
      `/policies/${mine.id}/versions/x`,
      `/policies/${mine.id}/versions/99999999999`,
    ]) {
      assert.equal((await api.call('GET', path)).status, 400, path);
    }
    const tooLong = await api.call('PATCH', `/policies/${mine.id}`, { json: { body: 'x'.repeat(200_001) } });
    assert.deepEqual([tooLong.status, tooLong.body.errors[0].path], [400, 'body/body']);
    const nul = await api.call('POST', '/policies', { json: { key: 'nul', title: 'x', body: 'a\u0000b' } });
    assert.deepEqual([nul.status, nul.body.errors[0].path], [400, 'body/body']);
  });
});
