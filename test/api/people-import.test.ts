// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API_PREFIX } from '../../src/api/index.ts';
import { type ApiFixture, type ApiResponse, publishedEvents, startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

async function importCsv(
  api: ApiFixture,
  csv: string,
  options: { dryRun?: boolean; key?: string; contentType?: string } = {},
): Promise<Omit<ApiResponse, 'headers'>> {
  const response = await fetch(
    `${api.url}${API_PREFIX}/people/import${options.dryRun ? '?dry_run=true' : ''}`,
    {
      method: 'POST',
      headers: {
        authorization: `Bearer ${options.key ?? api.org.key}`,
        'content-type': options.contentType ?? 'text/csv; charset=utf-8',
      },
      body: csv,
    },
  );
  return { status: response.status, body: await response.json() };
}

const FILE = [
  '\uFEFFemail,name,title,department,employment_status',
  'ada@example.com,"Lovelace, Ada",CTO,Engineering,current',
  'grace@example.com,"Grace ""Amazing"" Hopper",,Navy,former',
  'not-an-email,Someone,,,',
  'twin@example.com,Twin One,,,',
  'TWIN@example.com,Twin Two,,,',
  `long@example.com,${'x'.repeat(201)},,,`,
  'retired@example.com,R,,,retired',
  'short@example.com,only two fields',
  '',
].join('\r\n');

function summary(body: {
  rows: { line: number; email: string; action: string; refusal: { code: string } | null }[];
}) {
  return body.rows.map((row) => [row.line, row.email, row.action, row.refusal?.code ?? null]);
}

describe(`people CSV import on ${testDialect}`, () => {
  it('previews, then applies the good rows and refuses the bad ones; a second import changes nothing', async (t) => {
    const api = await startApiFixture(t);
    await api.call('POST', '/people', { json: { email: 'ada@example.com', name: 'Ada', title: 'CTO' } });
    const expected = [
      [2, 'ada@example.com', 'change', null],
      [3, 'grace@example.com', 'add', null],
      [4, 'not-an-email', 'refused', 'invalid_email'],
      [5, 'twin@example.com', 'refused', 'duplicate_email'],
      [6, 'twin@example.com', 'refused', 'duplicate_email'],
      [7, 'long@example.com', 'refused', 'too_long'],
      [8, 'retired@example.com', 'refused', 'unknown_employment_status'],
      [9, 'short@example.com', 'refused', 'wrong_field_count'],
    ];
    const preview = await importCsv(api, FILE, { dryRun: true });
    assert.equal(preview.status, 200, JSON.stringify(preview.body));
    assert.deepEqual(summary(preview.body), expected);
    assert.deepEqual(preview.body.counts, { add: 1, change: 1, unchanged: 0, refused: 6 });
    assert.equal(preview.body.dry_run, true);
    assert.deepEqual(preview.body.rows[0].changes, [
      { field: 'name', from: 'Ada', to: 'Lovelace, Ada' },
      { field: 'department', from: null, to: 'Engineering' },
    ]);
    assert.equal((await api.call('GET', '/people')).body.data.length, 1, 'a preview writes nothing');

    const applied = await importCsv(api, FILE);
    assert.equal(applied.status, 200);
    assert.equal(applied.body.dry_run, false);
    assert.deepEqual(summary(applied.body), expected);
    const people = (await api.call('GET', '/people')).body.data;
    assert.deepEqual(
      people.map((p: Record<string, unknown>) => [
        p.email,
        p.name,
        p.title,
        p.department,
        p.employment_status,
      ]),
      [
        ['ada@example.com', 'Lovelace, Ada', 'CTO', 'Engineering', 'current'],
        ['grace@example.com', 'Grace "Amazing" Hopper', null, 'Navy', 'former'],
      ],
    );
    assert.equal(applied.body.rows[1].person_id, people[1].id);
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => event.type),
      ['person.created', 'person.updated', 'person.created'],
    );
    const audit = (await api.call('GET', '/audit-events')).body.data;
    assert.deepEqual(
      audit
        .filter((e: { action: string }) => e.action.startsWith('person.'))
        .map((e: { action: string }) => e.action),
      ['person.created', 'person.updated', 'person.created'],
    );

    api.runtime.clock.advance(60_000);
    const again = await importCsv(api, FILE);
    assert.deepEqual(again.body.counts, { add: 0, change: 0, unchanged: 2, refused: 6 });
    assert.equal((await publishedEvents(api)).length, 3, 'applying twice changes nothing');
  });

  it('leaves columns the header does not name alone; becoming former marks the person as left', async (t) => {
    const api = await startApiFixture(t);
    await api.call('POST', '/people', { json: { email: 'ada@example.com', name: 'Ada', title: 'CTO' } });
    const result = await importCsv(api, 'Employment_Status,EMAIL\nformer,ada@example.com\n');
    assert.deepEqual(result.body.rows[0].changes, [
      { field: 'employment_status', from: 'current', to: 'former' },
      { field: 'left_on', from: null, to: '2026-03-01' },
    ]);
    const [ada] = (await api.call('GET', '/people')).body.data;
    assert.deepEqual([ada.name, ada.title, ada.left_on], ['Ada', 'CTO', '2026-03-01']);
    assert.deepEqual(
      (await publishedEvents(api)).map((event) => event.type),
      ['person.created', 'person.left'],
    );
  });

  it('refuses a file it cannot read as a whole with 400, and writes nothing', async (t) => {
    const api = await startApiFixture(t);
    const cases: [string, string][] = [
      ['', 'no_header'],
      ['name,title\nAda,CTO\n', 'no_email_column'],
      ['email,phone\na@b.co,1\n', 'unknown_column'],
      ['email,email\na@b.co,a@b.co\n', 'unknown_column'],
      ['email\n"a@b.co\n', 'malformed'],
      [`email\n${'a@b.co\n'.repeat(5001)}`, 'too_many_rows'],
    ];
    for (const [csv, reason] of cases) {
      for (const dryRun of [true, false]) {
        const response = await importCsv(api, csv, { dryRun });
        assert.deepEqual([response.status, response.body.code], [400, 'invalid_import'], reason);
        assert.equal(response.body.errors[0].path, 'body');
      }
    }
    const tooLarge = await importCsv(api, `email\n${'x'.repeat(1_048_577)}`);
    assert.equal(tooLarge.status, 413);
    const json = await importCsv(api, '{"email":"a@b.co"}', { contentType: 'application/json' });
    assert.equal(json.status, 415);
    const badQuery = await fetch(`${api.url}${API_PREFIX}/people/import?dry_run=maybe`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.org.key}`, 'content-type': 'text/csv' },
      body: 'email\na@b.co\n',
    });
    assert.equal(badQuery.status, 400);
    assert.equal((await api.call('GET', '/people')).body.data.length, 0);
  });

  it('imports into the workspace of the key only', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    await api.call('POST', '/people', { json: { email: 'ada@example.com', name: 'Ada' } });
    const theirs = await importCsv(api, 'email,name\nada@example.com,Their Ada\n', { key: other.key });
    assert.deepEqual(summary(theirs.body), [[2, 'ada@example.com', 'add', null]]);
    assert.equal((await api.call('GET', '/people')).body.data[0].name, 'Ada');
  });
});
