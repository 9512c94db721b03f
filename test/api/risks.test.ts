// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { countOpenRisksByRating, createRisk } from '../../src/compliance/index.ts';
import { type ApiFixture, publishedEvents, startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Risk {
  id: string;
  title: string;
  likelihood: number;
  impact: number;
  score: number;
  severity: string;
  status: string;
  owner_id: string | null;
  updated_at: string;
}

const LAPTOPS = { title: 'Laptop theft', likelihood: 3, impact: 4 };

async function titles(api: ApiFixture, query: string): Promise<string[]> {
  const response = await api.call('GET', `/risks${query}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.data.map((risk: Risk) => risk.title);
}

describe(`risks on ${testDialect}`, () => {
  it('are created open and untreated, with the score and severity derived', async (t) => {
    const api = await startApiFixture(t);
    const created = await api.call('POST', '/risks', {
      json: { ...LAPTOPS, description: 'Unencrypted disks.' },
    });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^rsk_[0-9a-z]{26}$/);
    assert.deepEqual(
      { ...created.body, id: undefined },
      {
        id: undefined,
        title: 'Laptop theft',
        description: 'Unencrypted disks.',
        likelihood: 3,
        impact: 4,
        score: 12,
        severity: 'high',
        treatment: 'untreated',
        treatment_plan: null,
        residual_likelihood: null,
        residual_impact: null,
        residual_score: null,
        due_date: null,
        control_ids: [],
        status: 'open',
        owner_id: null,
        created_at: '2026-03-01T12:00:00.000Z',
        updated_at: '2026-03-01T12:00:00.000Z',
      },
    );
    assert.deepEqual((await api.call('GET', `/risks/${created.body.id}`)).body, created.body);
    assert.deepEqual(await publishedEvents(api), [{ type: 'risk.created', data: created.body }]);
  });

  it('band the score: low 1-4, medium 5-9, high 10-16, critical 17-25', async (t) => {
    const api = await startApiFixture(t);
    for (const [likelihood, impact, severity] of [
      [1, 1, 'low'],
      [2, 2, 'low'],
      [1, 5, 'medium'],
      [3, 3, 'medium'],
      [2, 5, 'high'],
      [4, 4, 'high'],
      [4, 5, 'critical'],
      [5, 5, 'critical'],
    ] as const) {
      const risk = (await api.call('POST', '/risks', { json: { title: 'r', likelihood, impact } })).body;
      assert.deepEqual([risk.score, risk.severity], [likelihood * impact, severity]);
    }
  });

  it('recompute the score when likelihood or impact change, with a risk.updated event', async (t) => {
    const api = await startApiFixture(t);
    const risk = (await api.call('POST', '/risks', { json: LAPTOPS })).body;
    api.runtime.clock.advance(60_000);
    const lowered = await api.call('PATCH', `/risks/${risk.id}`, {
      json: { likelihood: 1, treatment: 'mitigate' },
    });
    assert.equal(lowered.status, 200);
    assert.deepEqual(
      [lowered.body.likelihood, lowered.body.impact, lowered.body.score, lowered.body.severity],
      [1, 4, 4, 'low'],
    );
    assert.equal(lowered.body.treatment, 'mitigate');
    assert.equal(lowered.body.updated_at, '2026-03-01T12:01:00.000Z');
    const raised = await api.call('PATCH', `/risks/${risk.id}`, { json: { impact: 5, likelihood: 5 } });
    assert.deepEqual([raised.body.score, raised.body.severity], [25, 'critical']);

    api.runtime.clock.advance(60_000);
    const same = await api.call('PATCH', `/risks/${risk.id}`, { json: { impact: 5, title: 'Laptop theft' } });
    assert.deepEqual(same.body, raised.body, 'nothing changed, updated_at kept');
    const closed = await api.call('PATCH', `/risks/${risk.id}`, { json: { status: 'closed' } });
    assert.equal(closed.body.status, 'closed');
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.score, event.data.status]),
      [
        ['risk.created', 12, 'open'],
        ['risk.updated', 4, 'open'],
        ['risk.updated', 25, 'open'],
        ['risk.updated', 25, 'closed'],
      ],
    );
    assert.deepEqual((await api.call('GET', `/risks/${risk.id}`)).body, closed.body);
  });

  it('refuse invalid risks and client scores with 400 naming each field', async (t) => {
    const api = await startApiFixture(t);
    const cases: [unknown, string[]][] = [
      [{ title: 'x', likelihood: 0, impact: 3 }, ['body/likelihood']],
      [{ title: 'x', likelihood: 6, impact: 3 }, ['body/likelihood']],
      [{ title: 'x', likelihood: 2.5, impact: 3 }, ['body/likelihood']],
      [{ title: 'x', likelihood: 3, impact: 0 }, ['body/impact']],
      [{ title: 'x', likelihood: 3 }, ['body/impact']],
      [{ likelihood: 3, impact: 3 }, ['body/title']],
      [{ ...LAPTOPS, title: '' }, ['body/title']],
      [{ ...LAPTOPS, score: 25 }, ['body/score']],
      [{ ...LAPTOPS, severity: 'low' }, ['body/severity']],
      [{ ...LAPTOPS, treatment: 'ignore' }, ['body/treatment']],
      [{ ...LAPTOPS, status: 'archived' }, ['body/status']],
      [{ ...LAPTOPS, description: 'x'.repeat(10_001) }, ['body/description']],
    ];
    for (const [json, paths] of cases) {
      const response = await api.call('POST', '/risks', { json });
      assert.equal(response.status, 400, JSON.stringify(json));
      assert.deepEqual(
        response.body.errors.map((e: { path: string }) => e.path).sort(),
        paths,
        JSON.stringify(response.body),
      );
    }
    assert.equal((await api.call('GET', '/risks')).body.data.length, 0, 'nothing was written');
    const risk = (await api.call('POST', '/risks', { json: LAPTOPS })).body;
    for (const [json, path] of [
      [{}, 'body'],
      [{ likelihood: 6 }, 'body/likelihood'],
      [{ score: 1 }, 'body/score'],
    ] as const) {
      const response = await api.call('PATCH', `/risks/${risk.id}`, { json });
      assert.deepEqual([response.status, response.body.errors[0].path], [400, path], JSON.stringify(json));
    }
    assert.equal((await api.call('GET', `/risks/${risk.id}`)).body.score, 12);
  });

  it('list most severe first, ties newest first, each risk once across pages', async (t) => {
    const api = await startApiFixture(t);
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
    const ratings = [
      [1, 1],
      [2, 3],
      [5, 5],
      [3, 2],
      [4, 4],
    ] as const;
    const created: Risk[] = [];
    for (let i = 0; i < 120; i++) {
      const [likelihood, impact] = ratings[i % ratings.length] as readonly [number, number];
      const result = await createRisk(
        deps,
        api.org.workspaceId,
        { title: `risk ${i}`, likelihood, impact },
        OPERATOR_SOURCE,
      );
      assert.ok(result.ok);
      created.push(result.value as Risk);
      if (i % 9 === 0) api.runtime.clock.advance(1);
    }
    const expected = [...created]
      .sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : -1))
      .map((risk) => risk.id);
    const { items, pages } = await walkPages<Risk>(api, '/risks?limit=7');
    assert.equal(pages, Math.ceil(120 / 7));
    assert.deepEqual(
      items.map((risk) => risk.id),
      expected,
    );
    assert.equal(new Set(items.map((risk) => risk.id)).size, 120);
    assert.deepEqual([items[0]?.score, items.at(-1)?.score], [25, 1]);

    const high = await walkPages<Risk>(api, '/risks?limit=7&severity=high');
    assert.deepEqual(
      high.items.map((risk) => risk.id),
      expected.filter((id) => created.find((risk) => risk.id === id)?.score === 16),
    );
    const medium = await walkPages<Risk>(api, '/risks?limit=5&severity=medium');
    assert.deepEqual(new Set(medium.items.map((risk) => risk.score)), new Set([6]));
    assert.equal(medium.items.length, 48);
  });

  it('filter by status, severity and owner', async (t) => {
    const api = await startApiFixture(t);
    const ada = (await api.call('POST', '/people', { json: { email: 'ada@example.com' } })).body;
    const grace = (await api.call('POST', '/people', { json: { email: 'grace@example.com' } })).body;
    const phishing = await api.call('POST', '/risks', {
      json: { title: 'Phishing', likelihood: 4, impact: 3, owner_id: ada.id },
    });
    assert.deepEqual([phishing.status, phishing.body.owner_id], [201, ada.id]);
    await api.call('POST', '/risks', {
      json: { title: 'Flood', likelihood: 1, impact: 5, owner_id: grace.id },
    });
    const ransomware = (
      await api.call('POST', '/risks', { json: { title: 'Ransomware', likelihood: 4, impact: 5 } })
    ).body;
    await api.call('PATCH', `/risks/${ransomware.id}`, { json: { status: 'closed', owner_id: ada.id } });

    assert.deepEqual(await titles(api, ''), ['Ransomware', 'Phishing', 'Flood']);
    assert.deepEqual(await titles(api, '?status=open'), ['Phishing', 'Flood']);
    assert.deepEqual(await titles(api, '?status=closed'), ['Ransomware']);
    assert.deepEqual(await titles(api, '?severity=medium'), ['Flood']);
    assert.deepEqual(await titles(api, '?severity=low'), []);
    assert.deepEqual(await titles(api, `?owner_id=${ada.id}`), ['Ransomware', 'Phishing']);
    assert.deepEqual(await titles(api, `?owner_id=${ada.id}&status=open&severity=high`), ['Phishing']);
    const unowned = await api.call('PATCH', `/risks/${phishing.body.id}`, { json: { owner_id: null } });
    assert.equal(unowned.body.owner_id, null);
    assert.deepEqual(await titles(api, `?owner_id=${ada.id}`), ['Ransomware']);
    const badFilter = await api.call('GET', '/risks?severity=extreme');
    assert.deepEqual([badFilter.status, badFilter.body.errors[0].path], [400, 'querystring/severity']);
  });

  it('search title and description, filter by treatment and by one cell of the matrix', async (t) => {
    const api = await startApiFixture(t);
    await api.call('POST', '/risks', {
      json: {
        title: 'Phishing',
        description: 'Staff give away 100%_ of passwords',
        likelihood: 4,
        impact: 3,
      },
    });
    await api.call('POST', '/risks', {
      json: { title: 'Flood', likelihood: 1, impact: 5, treatment: 'transfer' },
    });
    const ransomware = (
      await api.call('POST', '/risks', {
        json: { title: 'Ransomware', likelihood: 4, impact: 3, treatment: 'mitigate' },
      })
    ).body;

    assert.deepEqual(await titles(api, '?q=PASSWORD'), ['Phishing']);
    assert.deepEqual(await titles(api, '?q=100%25_'), ['Phishing'], 'wildcards are literal');
    assert.deepEqual(await titles(api, '?q=%25'), ['Phishing']);
    assert.deepEqual(await titles(api, '?q=flo'), ['Flood']);
    assert.deepEqual(await titles(api, '?treatment=transfer'), ['Flood']);
    assert.deepEqual(await titles(api, '?treatment=untreated'), ['Phishing']);
    assert.deepEqual(await titles(api, '?likelihood=4&impact=3'), ['Ransomware', 'Phishing']);
    assert.deepEqual(await titles(api, '?likelihood=4&impact=3&treatment=mitigate'), ['Ransomware']);
    assert.deepEqual(await titles(api, '?impact=5'), ['Flood']);

    await api.call('PATCH', `/risks/${ransomware.id}`, { json: { status: 'closed' } });
    const deps = { db: api.runtime.database.db, clock: api.runtime.clock };
    const cells = await countOpenRisksByRating(deps, api.org.workspaceId);
    assert.deepEqual(
      cells.sort((a, b) => a.impact - b.impact),
      [
        { likelihood: 4, impact: 3, count: 1 },
        { likelihood: 1, impact: 5, count: 1 },
      ],
      'open risks only, counted per cell',
    );
    assert.deepEqual(await countOpenRisksByRating(deps, (await api.createOrganization()).workspaceId), []);

    for (const bad of [
      'likelihood=6',
      'impact=0',
      'likelihood=2.5',
      'treatment=ignore',
      `q=${'x'.repeat(201)}`,
    ]) {
      const refused = await api.call('GET', `/risks?${bad}`);
      assert.equal(refused.status, 400, bad);
    }
  });

  it('delete: 204, then 404, and a risk.deleted event', async (t) => {
    const api = await startApiFixture(t);
    const risk = (await api.call('POST', '/risks', { json: LAPTOPS })).body;
    const deleted = await api.call('DELETE', `/risks/${risk.id}`);
    assert.deepEqual([deleted.status, deleted.body], [204, '']);
    assert.equal((await api.call('GET', `/risks/${risk.id}`)).status, 404);
    assert.equal((await api.call('PATCH', `/risks/${risk.id}`, { json: { impact: 1 } })).status, 404);
    assert.equal((await api.call('DELETE', `/risks/${risk.id}`)).status, 404);
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.id]),
      [
        ['risk.created', risk.id],
        ['risk.deleted', risk.id],
      ],
    );
    assert.deepEqual((await publishedEvents(api))[1]?.data, { id: risk.id });
  });

  it('keep organizations apart, also for owners named in a body', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const mine = (await api.call('POST', '/people', { json: { email: 'ada@example.com' } })).body;
    const risk = (await api.call('POST', '/risks', { json: { ...LAPTOPS, owner_id: mine.id } })).body;

    assert.deepEqual((await api.call('GET', '/risks', { key: other.key })).body.data, []);
    assert.deepEqual((await api.call('GET', `/risks?owner_id=${mine.id}`, { key: other.key })).body.data, []);
    for (const [method, json] of [
      ['GET', undefined],
      ['PATCH', { impact: 1 }],
      ['DELETE', undefined],
    ] as const) {
      const response = await api.call(method, `/risks/${risk.id}`, { key: other.key, json });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], method);
    }

    const foreignOwner = await api.call('POST', '/risks', {
      key: other.key,
      json: { ...LAPTOPS, owner_id: mine.id },
    });
    assert.deepEqual(
      [foreignOwner.status, foreignOwner.body.code, foreignOwner.body.errors[0].path],
      [404, 'reference_not_found', 'body/owner_id'],
    );
    const theirs = (await api.call('POST', '/risks', { key: other.key, json: LAPTOPS })).body;
    const moved = await api.call('PATCH', `/risks/${theirs.id}`, {
      key: other.key,
      json: { owner_id: mine.id },
    });
    assert.deepEqual([moved.status, moved.body.code], [404, 'reference_not_found']);
    const unknownOwner = await api.call('POST', '/risks', { json: { ...LAPTOPS, owner_id: 'per_nobody' } });
    assert.deepEqual([unknownOwner.status, unknownOwner.body.code], [404, 'reference_not_found']);

    assert.deepEqual((await api.call('GET', `/risks/${risk.id}`)).body, risk, 'untouched');
    assert.deepEqual(
      (await api.call('GET', '/risks')).body.data.map((r: Risk) => r.id),
      [risk.id],
    );
  });
});
