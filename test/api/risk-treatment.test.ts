// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiFixture, publishedEvents, startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Risk {
  id: string;
  title: string;
  score: number;
  treatment: string;
  treatment_plan: string | null;
  residual_likelihood: number | null;
  residual_impact: number | null;
  residual_score: number | null;
  due_date: string | null;
  control_ids: string[];
  updated_at: string;
}

interface AuditEvent {
  action: string;
  actor: { user_id: string | null; api_key_id: string | null; label: string };
  target: { type: string; id: string; label: string | null } | null;
  changes: Record<string, { from: unknown; to: unknown }> | null;
}

const LAPTOPS = { title: 'Laptop theft', likelihood: 3, impact: 4 };

/** The first `count` controls of the workspace, in Annex A (id) order. */
async function controlIds(api: ApiFixture, count: number, key?: string): Promise<string[]> {
  const response = await api.call('GET', `/controls?limit=${count}`, key ? { key } : {});
  return response.body.data.map((control: { id: string }) => control.id);
}

async function auditOf(api: ApiFixture, id: string): Promise<AuditEvent[]> {
  const response = await api.call('GET', `/audit-events?target_id=${id}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.data;
}

describe(`risk treatment on ${testDialect}`, () => {
  it('records the plan, residual rating, due date and treating controls, with residual_score derived', async (t) => {
    const api = await startApiFixture(t);
    const [a, , c] = await controlIds(api, 3);
    const created = await api.call('POST', '/risks', {
      json: {
        ...LAPTOPS,
        treatment: 'mitigate',
        treatment_plan: 'Full-disk encryption through device management.',
        residual_likelihood: 3,
        residual_impact: 1,
        due_date: '2026-06-30',
        control_ids: [c, a, c],
      },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(
      [
        created.body.treatment_plan,
        created.body.residual_likelihood,
        created.body.residual_impact,
        created.body.residual_score,
        created.body.due_date,
        created.body.control_ids,
      ],
      ['Full-disk encryption through device management.', 3, 1, 3, '2026-06-30', [a, c]],
      'the controls once each, in Annex A order',
    );
    assert.equal(created.body.score, 12, 'the inherent score is unchanged by the residual one');
    assert.deepEqual((await api.call('GET', `/risks/${created.body.id}`)).body, created.body);
    assert.deepEqual(await publishedEvents(api), [{ type: 'risk.created', data: created.body }]);

    const audit = await auditOf(api, created.body.id);
    const me = (await api.call('GET', '/me')).body;
    assert.deepEqual(audit, [
      {
        ...audit[0],
        action: 'risk.created',
        actor: {
          user_id: null,
          api_key_id: api.org.keyId,
          label: `API key “test key” (${me.api_key.prefix}…)`,
        },
        target: { type: 'risk', id: created.body.id, label: 'Laptop theft' },
        changes: null,
      },
    ]);
  });

  it('leaves residual_score null until both residual ratings are given, and null clears them', async (t) => {
    const api = await startApiFixture(t);
    const risk = (await api.call('POST', '/risks', { json: { ...LAPTOPS, residual_likelihood: 2 } })).body;
    assert.deepEqual([risk.residual_likelihood, risk.residual_impact, risk.residual_score], [2, null, null]);
    const rated = await api.call('PATCH', `/risks/${risk.id}`, { json: { residual_impact: 4 } });
    assert.deepEqual([rated.status, rated.body.residual_score], [200, 8]);
    const cleared = await api.call('PATCH', `/risks/${risk.id}`, {
      json: { residual_likelihood: null, due_date: null },
    });
    assert.deepEqual(
      [cleared.body.residual_likelihood, cleared.body.residual_impact, cleared.body.residual_score],
      [null, 4, null],
    );
  });

  it('allows every treatment without a plan; accept needs none', async (t) => {
    const api = await startApiFixture(t);
    for (const treatment of ['untreated', 'mitigate', 'accept', 'transfer', 'avoid']) {
      const response = await api.call('POST', '/risks', { json: { ...LAPTOPS, treatment } });
      assert.deepEqual([response.status, response.body.treatment_plan], [201, null], treatment);
    }
  });

  it('PATCH replaces the controls and the audit event says what changed, controls as {from, to}', async (t) => {
    const api = await startApiFixture(t);
    const [a, b, c] = (await controlIds(api, 3)) as [string, string, string];
    const risk = (await api.call('POST', '/risks', { json: { ...LAPTOPS, control_ids: [a, b] } })).body;
    api.runtime.clock.advance(60_000);
    const relinked = await api.call('PATCH', `/risks/${risk.id}`, {
      json: {
        control_ids: [c, b],
        treatment: 'mitigate',
        treatment_plan: 'Encrypt disks.',
        due_date: '2026-09-30',
      },
    });
    assert.equal(relinked.status, 200, JSON.stringify(relinked.body));
    assert.deepEqual(relinked.body.control_ids, [b, c]);
    assert.equal(relinked.body.updated_at, '2026-03-01T12:01:00.000Z');

    api.runtime.clock.advance(60_000);
    const same = await api.call('PATCH', `/risks/${risk.id}`, {
      json: { control_ids: [c, b, c], treatment_plan: 'Encrypt disks.' },
    });
    assert.deepEqual(same.body, relinked.body, 'the same set in another order changes nothing');

    const unlinked = await api.call('PATCH', `/risks/${risk.id}`, {
      json: { control_ids: [], treatment_plan: null },
    });
    assert.deepEqual([unlinked.body.control_ids, unlinked.body.treatment_plan], [[], null]);
    assert.deepEqual((await api.call('GET', `/risks/${risk.id}`)).body, unlinked.body);

    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.control_ids]),
      [
        ['risk.created', [a, b]],
        ['risk.updated', [b, c]],
        ['risk.updated', []],
      ],
    );
    const audit = await auditOf(api, risk.id);
    assert.deepEqual(
      audit.map((event) => [event.action, event.changes]),
      [
        [
          'risk.updated',
          {
            treatment_plan: { from: 'Encrypt disks.', to: null },
            control_ids: { from: [b, c], to: [] },
          },
        ],
        [
          'risk.updated',
          {
            treatment: { from: 'untreated', to: 'mitigate' },
            treatment_plan: { from: null, to: 'Encrypt disks.' },
            due_date: { from: null, to: '2026-09-30' },
            control_ids: { from: [a, b], to: [b, c] },
          },
        ],
        ['risk.created', null],
      ],
    );
    for (const event of audit) assert.equal(event.actor.api_key_id, api.org.keyId);

    assert.equal((await api.call('DELETE', `/risks/${risk.id}`)).status, 204);
    const deleted = await api.call('GET', `/audit-events?target_id=${risk.id}&action=risk.deleted`);
    assert.deepEqual(
      deleted.body.data.map((event: AuditEvent) => [
        event.action,
        event.target?.label,
        event.actor.api_key_id,
      ]),
      [['risk.deleted', 'Laptop theft', api.org.keyId]],
    );
  });

  it('filter by control, still most severe first, across pages', async (t) => {
    const api = await startApiFixture(t);
    const [a, b] = (await controlIds(api, 2)) as [string, string];
    const ratings = [
      [1, 2],
      [5, 5],
      [3, 3],
      [4, 5],
      [2, 2],
      [3, 3],
    ] as const;
    const created: Risk[] = [];
    for (const [index, [likelihood, impact]] of ratings.entries()) {
      const control_ids = index % 2 === 0 ? [a] : [a, b];
      const response = await api.call('POST', '/risks', {
        json: { title: `risk ${index}`, likelihood, impact, control_ids },
      });
      created.push(response.body);
      api.runtime.clock.advance(1);
    }
    await api.call('POST', '/risks', { json: { title: 'no control', likelihood: 5, impact: 5 } });
    const bySeverity = (risks: Risk[]) =>
      [...risks].sort((x, y) => y.score - x.score || (x.id < y.id ? 1 : -1)).map((risk) => risk.id);

    const ofA = await walkPages<Risk>(api, `/risks?control_id=${a}&limit=4`);
    assert.deepEqual(
      ofA.items.map((risk) => risk.id),
      bySeverity(created),
    );
    assert.equal(ofA.pages, 2);
    const ofB = await walkPages<Risk>(api, `/risks?control_id=${b}&limit=2`);
    assert.deepEqual(
      ofB.items.map((risk) => risk.id),
      bySeverity(created.filter((risk) => risk.control_ids.includes(b))),
    );
    assert.ok(ofB.items.every((risk) => risk.control_ids.join() === [a, b].join()));
    const critical = await api.call('GET', `/risks?control_id=${b}&severity=critical`);
    assert.deepEqual(
      critical.body.data.map((risk: Risk) => risk.score),
      [25, 20],
    );
    assert.deepEqual((await api.call('GET', '/risks?control_id=ctl_nothing')).body.data, []);
    const all = await walkPages<Risk>(api, '/risks?limit=3');
    assert.equal(all.items.length, 7);
    assert.deepEqual(
      all.items.map((risk) => risk.score),
      [25, 25, 20, 9, 9, 4, 2],
    );
  });

  it('refuse bad treatment input with 400 naming the field, and write nothing', async (t) => {
    const api = await startApiFixture(t);
    const [a] = (await controlIds(api, 1)) as [string];
    const cases: [unknown, string][] = [
      [{ ...LAPTOPS, residual_likelihood: 0 }, 'body/residual_likelihood'],
      [{ ...LAPTOPS, residual_likelihood: 6 }, 'body/residual_likelihood'],
      [{ ...LAPTOPS, residual_impact: 2.5 }, 'body/residual_impact'],
      [{ ...LAPTOPS, residual_impact: '3' }, 'body/residual_impact'],
      [{ ...LAPTOPS, residual_score: 4 }, 'body/residual_score'],
      [{ ...LAPTOPS, due_date: '2026-02-30' }, 'body/due_date'],
      [{ ...LAPTOPS, due_date: '30/06/2026' }, 'body/due_date'],
      [{ ...LAPTOPS, due_date: '2026-06-30T00:00:00Z' }, 'body/due_date'],
      [{ ...LAPTOPS, treatment_plan: 'x'.repeat(10_001) }, 'body/treatment_plan'],
      [{ ...LAPTOPS, treatment_plan: 'nul \u0000' }, 'body/treatment_plan'],
      [{ ...LAPTOPS, treatment_plan: 7 }, 'body/treatment_plan'],
      [{ ...LAPTOPS, control_ids: a }, 'body/control_ids'],
      [{ ...LAPTOPS, control_ids: null }, 'body/control_ids'],
      [{ ...LAPTOPS, control_ids: [''] }, 'body/control_ids/0'],
      [{ ...LAPTOPS, control_ids: [a, 'x'.repeat(65)] }, 'body/control_ids/1'],
      [{ ...LAPTOPS, control_ids: Array.from({ length: 101 }, () => a) }, 'body/control_ids'],
    ];
    for (const [json, path] of cases) {
      const response = await api.call('POST', '/risks', { json });
      assert.deepEqual(
        [response.status, response.body.code, response.body.errors?.[0]?.path],
        [400, 'invalid_request', path],
        JSON.stringify(json).slice(0, 200),
      );
    }
    assert.equal((await api.call('GET', '/risks')).body.data.length, 0, 'nothing was written');
    const risk = (await api.call('POST', '/risks', { json: LAPTOPS })).body;
    for (const [json, path] of cases) {
      const { title: _t, likelihood: _l, impact: _i, ...patch } = json as Record<string, unknown>;
      const response = await api.call('PATCH', `/risks/${risk.id}`, { json: patch });
      assert.deepEqual([response.status, response.body.errors?.[0]?.path], [400, path]);
    }
    for (const query of ['control_id=', `control_id=${'x'.repeat(65)}`, `control_id=${a}&control=1`]) {
      const response = await api.call('GET', `/risks?${query}`);
      assert.equal(response.status, 400, query);
    }
    assert.deepEqual((await api.call('GET', `/risks/${risk.id}`)).body, risk, 'unchanged');
  });

  it('answer reference_not_found for controls of another workspace, and 404 for its risks', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const [ours] = (await controlIds(api, 1)) as [string];
    const [theirs] = (await controlIds(api, 1, other.key)) as [string];
    const risk = (await api.call('POST', '/risks', { json: { ...LAPTOPS, control_ids: [ours] } })).body;

    const attempts: [string, string, unknown, string][] = [
      ['POST', '/risks', { ...LAPTOPS, control_ids: [ours, theirs] }, 'body/control_ids/1'],
      ['POST', '/risks', { ...LAPTOPS, control_ids: ['ctl_nobody'] }, 'body/control_ids/0'],
      ['PATCH', `/risks/${risk.id}`, { control_ids: [theirs] }, 'body/control_ids/0'],
    ];
    for (const [method, path, json, field] of attempts) {
      const response = await api.call(method, path, { json });
      assert.deepEqual(
        [response.status, response.body.code, response.body.errors?.[0]?.path],
        [404, 'reference_not_found', field],
        `${method} ${path} ${JSON.stringify(json)}`,
      );
    }
    for (const [method, json] of [
      ['GET', undefined],
      ['PATCH', { control_ids: [theirs] }],
      ['DELETE', undefined],
    ] as const) {
      const response = await api.call(method, `/risks/${risk.id}`, { key: other.key, json });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], method);
    }
    assert.deepEqual((await api.call('GET', `/risks?control_id=${ours}`, { key: other.key })).body.data, []);
    assert.deepEqual((await api.call('GET', `/risks?control_id=${theirs}`)).body.data, []);
    assert.deepEqual((await api.call('GET', `/risks/${risk.id}`)).body, risk, 'untouched');
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => event.type),
      ['risk.created'],
    );
  });
});
