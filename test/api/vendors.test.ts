// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiFixture, publishedEvents, startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Vendor {
  id: string;
  name: string;
  website: string | null;
}

const HOSTING = {
  name: 'Example Cloud',
  website: 'https://cloud.example.com',
  description: 'Production hosting.',
  risk_level: 'high',
  status: 'active',
};

async function names(api: ApiFixture, query: string): Promise<string[]> {
  const response = await api.call('GET', `/vendors${query}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  return response.body.data.map((vendor: Vendor) => vendor.name);
}

describe(`vendors on ${testDialect}`, () => {
  it('are created from a name alone, medium risk and active until told otherwise', async (t) => {
    const api = await startApiFixture(t);
    const bare = await api.call('POST', '/vendors', { json: { name: 'Payroll Co' } });
    assert.equal(bare.status, 201);
    assert.match(bare.body.id, /^vnd_[0-9a-z]{26}$/);
    assert.deepEqual(
      { ...bare.body, id: undefined },
      {
        id: undefined,
        name: 'Payroll Co',
        website: null,
        description: null,
        risk_level: 'medium',
        status: 'active',
        owner_id: null,
        next_review_date: null,
        created_at: '2026-03-01T12:00:00.000Z',
        updated_at: '2026-03-01T12:00:00.000Z',
      },
    );
    const full = await api.call('POST', '/vendors', { json: { ...HOSTING, status: 'prospective' } });
    assert.equal(full.status, 201);
    assert.deepEqual(
      [full.body.website, full.body.description, full.body.risk_level, full.body.status],
      ['https://cloud.example.com', 'Production hosting.', 'high', 'prospective'],
    );
    assert.deepEqual((await api.call('GET', `/vendors/${full.body.id}`)).body, full.body);
    assert.deepEqual(await publishedEvents(api), [
      { type: 'vendor.created', data: bare.body },
      { type: 'vendor.created', data: full.body },
    ]);
  });

  it('change a vendor with PATCH; null clears, an unchanged body publishes nothing', async (t) => {
    const api = await startApiFixture(t);
    const vendor = (await api.call('POST', '/vendors', { json: HOSTING })).body;
    api.runtime.clock.advance(60_000);
    const reviewed = await api.call('PATCH', `/vendors/${vendor.id}`, {
      json: { status: 'under_review', risk_level: 'critical', website: null },
    });
    assert.equal(reviewed.status, 200);
    assert.deepEqual(
      [reviewed.body.status, reviewed.body.risk_level, reviewed.body.website, reviewed.body.name],
      ['under_review', 'critical', null, 'Example Cloud'],
    );
    assert.equal(reviewed.body.updated_at, '2026-03-01T12:01:00.000Z');
    api.runtime.clock.advance(60_000);
    const same = await api.call('PATCH', `/vendors/${vendor.id}`, { json: { status: 'under_review' } });
    assert.deepEqual(same.body, reviewed.body, 'updated_at kept');
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => [event.type, event.data.status]),
      [
        ['vendor.created', 'active'],
        ['vendor.updated', 'under_review'],
      ],
    );
    assert.deepEqual((await api.call('GET', `/vendors/${vendor.id}`)).body, reviewed.body);
  });

  it('refuse invalid vendors with 400 naming each field', async (t) => {
    const api = await startApiFixture(t);
    const cases: [unknown, string[]][] = [
      [{}, ['body/name']],
      [{ name: '' }, ['body/name']],
      [{ name: 'x'.repeat(201) }, ['body/name']],
      [{ name: 'x', website: 'ftp://files.example.com' }, ['body/website']],
      [{ name: 'x', website: 'javascript:alert(1)' }, ['body/website']],
      [{ name: 'x', website: 'cloud.example.com' }, ['body/website']],
      [{ name: 'x', risk_level: 'extreme' }, ['body/risk_level']],
      [{ name: 'x', status: 'archived' }, ['body/status']],
      [{ name: 'x', owner: 'me' }, ['body/owner']],
    ];
    for (const [json, paths] of cases) {
      const response = await api.call('POST', '/vendors', { json });
      assert.equal(response.status, 400, JSON.stringify(json));
      assert.deepEqual(
        response.body.errors.map((e: { path: string }) => e.path),
        paths,
        JSON.stringify(response.body),
      );
    }
    assert.equal((await api.call('GET', '/vendors')).body.data.length, 0, 'nothing was written');
    const vendor = (await api.call('POST', '/vendors', { json: { name: 'x', website: 'HTTP://x.example' } }))
      .body;
    assert.equal(vendor.website, 'HTTP://x.example');
    for (const [json, path] of [
      [{}, 'body'],
      [{ website: 'mailto:a@example.com' }, 'body/website'],
      [{ name: null }, 'body/name'],
    ] as const) {
      const response = await api.call('PATCH', `/vendors/${vendor.id}`, { json });
      assert.deepEqual([response.status, response.body.errors[0].path], [400, path], JSON.stringify(json));
    }
  });

  it('search name and website literally, filter by status and risk level, oldest first', async (t) => {
    const api = await startApiFixture(t);
    const vendors = [
      { name: 'Acme 100% Uptime', website: 'https://acme.example' },
      { name: 'Big_Data Ltd', website: 'https://bigdata.example', risk_level: 'critical' },
      { name: 'BigXData', website: 'https://x.example', status: 'offboarded' },
      { name: 'Mailer', website: 'https://send.mailer.example', risk_level: 'low' },
      { name: '100 Percent', risk_level: 'low', status: 'offboarded' },
    ];
    for (const json of vendors) {
      assert.equal((await api.call('POST', '/vendors', { json })).status, 201);
      api.runtime.clock.advance(1);
    }
    assert.deepEqual(
      await names(api, ''),
      vendors.map((vendor) => vendor.name),
    );
    assert.deepEqual(await names(api, '?q=big_'), ['Big_Data Ltd']);
    assert.deepEqual(await names(api, `?q=${encodeURIComponent('100%')}`), ['Acme 100% Uptime']);
    assert.deepEqual(await names(api, '?q=%25'), ['Acme 100% Uptime']);
    assert.deepEqual(await names(api, '?q=_'), ['Big_Data Ltd']);
    assert.deepEqual(await names(api, '?q=MAILER.EX'), ['Mailer']);
    assert.deepEqual(await names(api, '?q=bigdata.example'), ['Big_Data Ltd']);
    assert.deepEqual(await names(api, '?status=offboarded'), ['BigXData', '100 Percent']);
    assert.deepEqual(await names(api, '?risk_level=low'), ['Mailer', '100 Percent']);
    assert.deepEqual(await names(api, '?risk_level=low&status=active'), ['Mailer']);
    assert.deepEqual(await names(api, '?q=big&risk_level=medium'), ['BigXData']);
    const { items, pages } = await walkPages<Vendor>(api, '/vendors?limit=2');
    assert.deepEqual([items.map((vendor) => vendor.name), pages], [vendors.map((vendor) => vendor.name), 3]);
    const bad = await api.call('GET', '/vendors?risk=low');
    assert.deepEqual([bad.status, bad.body.errors[0].path], [400, 'querystring/risk']);
  });

  it('delete: 204, then 404, and a vendor.deleted event', async (t) => {
    const api = await startApiFixture(t);
    const vendor = (await api.call('POST', '/vendors', { json: HOSTING })).body;
    const deleted = await api.call('DELETE', `/vendors/${vendor.id}`);
    assert.deepEqual([deleted.status, deleted.body], [204, '']);
    assert.equal((await api.call('GET', `/vendors/${vendor.id}`)).status, 404);
    assert.equal((await api.call('DELETE', `/vendors/${vendor.id}`)).status, 404);
    assert.deepEqual((await publishedEvents(api)).at(-1), {
      type: 'vendor.deleted',
      data: { id: vendor.id },
    });
    assert.deepEqual((await api.call('GET', '/vendors')).body.data, []);
  });

  it('keep organizations apart', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const vendor = (await api.call('POST', '/vendors', { json: HOSTING })).body;
    assert.deepEqual((await api.call('GET', '/vendors', { key: other.key })).body.data, []);
    assert.deepEqual((await api.call('GET', '/vendors?q=cloud', { key: other.key })).body.data, []);
    for (const [method, json] of [
      ['GET', undefined],
      ['PATCH', { status: 'offboarded' }],
      ['DELETE', undefined],
    ] as const) {
      const response = await api.call(method, `/vendors/${vendor.id}`, { key: other.key, json });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], method);
    }
    assert.deepEqual((await api.call('GET', `/vendors/${vendor.id}`)).body, vendor, 'untouched');
    const events = await publishedEvents(api);
    assert.deepEqual(
      events.map((event) => event.type),
      ['vendor.created'],
    );
  });
});
