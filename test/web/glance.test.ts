// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { testDialect } from '../helpers/database.ts';
import { type SignedInOwner, signedInOwner } from '../helpers/web.ts';

const PLANTED = `<script>alert('x')</script><img src=x onerror="alert(1)">`;

/** The controls of the workspace in Annex A order, from the REST API. */
async function controls(owner: SignedInOwner): Promise<{ id: string; reference: string; theme: string }[]> {
  const first = await owner.api('GET', '/controls?limit=200');
  assert.equal(first.status, 200);
  return first.body.data;
}

/** The rows (control ids) of a controls list page. */
function rowIds(html: string): string[] {
  return [...html.matchAll(/<tr id="(ctl_[^"]+)">/g)].map((match) => match[1] as string);
}

function heatCells(html: string): Map<string, number> {
  return new Map(
    [...html.matchAll(/data-likelihood="(\d)" data-impact="(\d)">(?:<a [^>]+>)?(\d+)[ <]/g)].map((match) => [
      `${match[1]}x${match[2]}`,
      Number(match[3]),
    ]),
  );
}

/** The counts table of the overview: theme label -> the numbers of its cells, in column order. */
function countsTable(html: string): Map<string, string[]> {
  const table = /<table class="record-table counts-table">([\s\S]*?)<\/table>/.exec(html)?.[1] ?? '';
  const rows = new Map<string, string[]>();
  for (const row of table.matchAll(/<th scope="row">([^<]+)<\/th>([\s\S]*?)<\/tr>/g)) {
    const cells = [...(row[2] ?? '').matchAll(/<td[^>]*>(?:<a [^>]*>)?([\d.]+%?)/g)].map(
      (cell) => cell[1] ?? '',
    );
    rows.set(row[1] ?? '', cells);
  }
  return rows;
}

describe(`the workspace at a glance and the controls list on ${testDialect}`, () => {
  it('shows the readiness GET /api/v1/readiness answers, after controls changed in the API and in the page', async (t) => {
    const owner = await signedInOwner(t);
    const all = await controls(owner);
    const changes: [number, string][] = [
      [0, 'implemented'],
      [1, 'implemented'],
      [2, 'in_progress'],
      [40, 'not_applicable'],
      [50, 'implemented'],
      [60, 'not_applicable'],
      [80, 'implemented'],
    ];
    for (const [index, status] of changes.slice(0, 4)) {
      const justification = status === 'not_applicable' ? 'No offices of our own.' : undefined;
      const answer = await owner.api('PATCH', `/controls/${all[index]?.id}`, { status, justification });
      assert.equal(answer.status, 200);
    }
    await owner.client.get(`${owner.page}/controls`);
    for (const [index, status] of changes.slice(4)) {
      const answer = await owner.client.post(`${owner.page}/controls/${all[index]?.id}`, {
        status,
        owner_id: '',
        justification: status === 'not_applicable' ? 'No data centre of our own.' : '',
      });
      assert.equal(answer.status, 303, answer.body);
    }

    const readiness = (await owner.api('GET', '/readiness')).body;
    const page = await owner.client.get(owner.page);
    assert.equal(page.status, 200);
    assert.match(
      page.body,
      new RegExp(
        `<strong>${readiness.percent_implemented}%</strong> of applicable controls implemented: ${readiness.implemented} of ${readiness.applicable}`,
      ),
    );
    assert.equal(readiness.implemented, 4);
    const table = countsTable(page.body);
    const order = ['implemented', 'in_progress', 'not_started', 'not_applicable'];
    const expected = (counts: Record<string, number>, percent: number) => [
      ...order.map((status) => String(counts[status])),
      `${percent}%`,
    ];
    assert.deepEqual(table.get('All controls'), expected(readiness.by_status, readiness.percent_implemented));
    for (const [theme, label] of [
      ['organizational', 'Organizational'],
      ['people', 'People'],
      ['physical', 'Physical'],
      ['technological', 'Technological'],
    ] as const) {
      const numbers = readiness.by_theme[theme];
      assert.deepEqual(table.get(label), expected(numbers.by_status, numbers.percent_implemented), theme);
      assert.match(
        page.body,
        new RegExp(`aria-label="${label}: ${numbers.percent_implemented}% of applicable`),
      );
    }
    assert.doesNotMatch(page.body, /style=/, 'no style attributes: the CSP allows no inline styles');
  });

  it('counts the open risks in the cells of the likelihood x impact heat map', async (t) => {
    const owner = await signedInOwner(t);
    const risks: [number, number, string?][] = [
      [5, 5],
      [5, 5],
      [4, 5],
      [1, 1],
      [3, 2],
      [3, 2],
      [3, 2],
      [2, 4, 'closed'],
    ];
    for (const [likelihood, impact, status] of risks) {
      const created = await owner.api('POST', '/risks', {
        title: `Risk ${likelihood}x${impact}`,
        likelihood,
        impact,
        ...(status ? { status } : {}),
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
    }
    const page = await owner.client.get(owner.page);
    const cells = heatCells(page.body);
    assert.equal(cells.size, 25);
    const expected = new Map([
      ['5x5', 2],
      ['4x5', 1],
      ['1x1', 1],
      ['3x2', 3],
    ]);
    for (const [cell, count] of cells) assert.equal(count, expected.get(cell) ?? 0, cell);
    assert.match(page.body, /Open risks by likelihood and impact \(7 in all\)/);
    assert.match(
      page.body,
      new RegExp(
        `class="heat heat-critical" data-likelihood="5" data-impact="5"><a href="${owner.page}/risks\\?status=open&amp;likelihood=5&amp;impact=5">2<`,
      ),
    );
    assert.match(
      page.body,
      /data-impact="1"><a href="[^"]+">1<span class="visually-hidden"> open risk,<\/span><\/a> <span class="heat-severity">low</,
      'the severity in words, not only in colour',
    );
  });

  it('searches and filters the controls list, pages like the REST list, and refuses unknown filters', async (t) => {
    const owner = await signedInOwner(t);
    const all = await controls(owner);
    const list = `${owner.page}/controls`;

    const first = await owner.client.get(list);
    assert.equal(first.status, 200);
    assert.deepEqual(
      rowIds(first.body),
      all.slice(0, 50).map((control) => control.id),
    );
    const next = /<a href="([^"]+)" rel="next">/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    assert.ok(next);
    const second = await owner.client.get(next);
    assert.deepEqual(
      rowIds(second.body),
      all.slice(50).map((control) => control.id),
    );
    assert.doesNotMatch(second.body, /rel="next"/);

    const searched = await owner.client.get(`${list}?q=${encodeURIComponent('access')}`);
    const api = (await owner.api('GET', '/controls?q=access&limit=200')).body.data;
    assert.ok(api.length > 0);
    assert.deepEqual(
      rowIds(searched.body),
      api.map((control: { id: string }) => control.id),
    );

    await owner.api('PATCH', `/controls/${all[7]?.id}`, { status: 'implemented' });
    await owner.api('PATCH', `/controls/${all[70]?.id}`, { status: 'implemented' });
    const implemented = await owner.client.get(`${list}?status=implemented`);
    assert.deepEqual(rowIds(implemented.body), [all[7]?.id, all[70]?.id]);
    const physicalDone = await owner.client.get(`${list}?status=implemented&theme=${all[70]?.theme}`);
    assert.deepEqual(rowIds(physicalDone.body), [all[70]?.id]);
    const physical = await owner.client.get(`${list}?theme=physical`);
    assert.deepEqual(
      rowIds(physical.body),
      all.filter((control) => control.theme === 'physical').map((control) => control.id),
    );
    const none = await owner.client.get(`${list}?q=${encodeURIComponent('%_no such control')}`);
    assert.equal(none.status, 200);
    assert.match(none.body, /No control matches these filters/);

    for (const bad of ['status=done', 'theme=cosmic', `q=${'x'.repeat(201)}`, 'q=a&q=b', 'cursor=nonsense']) {
      const refused = await owner.client.get(`${list}?${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.match(refused.body, /<meta name="error-code" content="invalid_(filter|cursor)">/, bad);
    }
  });

  it('changes status and owner in the page: the REST API shows it, control.updated is published, the filters are kept', async (t) => {
    const owner = await signedInOwner(t);
    const person = await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada Lovelace' });
    assert.equal(person.status, 201);
    const all = await controls(owner);
    const target = all.find((control) => control.theme === 'technological');
    assert.ok(target);
    const list = `${owner.page}/controls?q=${encodeURIComponent(target.reference)}&theme=technological`;
    await owner.client.get(list);
    const changed = await owner.client.post(`${owner.page}/controls/${target.id}`, {
      status: 'in_progress',
      owner_id: person.body.id,
      list_q: target.reference,
      list_theme: 'technological',
    });
    assert.equal(changed.status, 303);
    assert.equal(
      changed.location,
      `${owner.page}/controls?q=${encodeURIComponent(target.reference).replaceAll('%2E', '.')}&theme=technological&notice=updated#${target.id}`,
    );
    const shown = await owner.api('GET', `/controls/${target.id}`);
    assert.equal(shown.body.status, 'in_progress');
    assert.equal(shown.body.owner_id, person.body.id);
    const events = await owner.fixture.runtime.database.db
      .selectFrom('webhook_events')
      .select(['type', 'payload'])
      .where('workspace_id', '=', owner.workspaceId)
      .execute();
    const updated = events.filter((event) => event.type === 'control.updated');
    assert.equal(updated.length, 1);
    assert.deepEqual(JSON.parse(updated[0]?.payload ?? '{}').data, shown.body);

    const after = await owner.client.get(changed.location ?? '');
    assert.match(after.body, /Control updated\./);
    assert.match(after.body, new RegExp(`<option value="${person.body.id}" selected>Ada Lovelace</option>`));

    const same = await owner.client.post(`${owner.page}/controls/${target.id}`, {
      status: 'in_progress',
      owner_id: person.body.id,
    });
    assert.equal(same.status, 303);
    const refused = await owner.client.post(`${owner.page}/controls/${target.id}`, {
      status: 'finished',
      owner_id: '',
    });
    assert.equal(refused.status, 400);
    assert.match(refused.body, /<meta name="error-code" content="invalid_request">/);
    const unknownOwner = await owner.client.post(`${owner.page}/controls/${target.id}`, {
      status: 'implemented',
      owner_id: 'per_nobody',
    });
    assert.equal(unknownOwner.status, 409);
    assert.match(unknownOwner.body, /<meta name="error-code" content="reference_not_found">/);
    const withoutToken = await owner.client.post(`${owner.page}/controls/${target.id}`, {
      status: 'implemented',
      owner_id: '',
      _csrf: 'forged',
    });
    assert.equal(withoutToken.status, 403);
    assert.equal((await owner.api('GET', `/controls/${target.id}`)).body.status, 'in_progress');
    const count = await owner.fixture.runtime.database.db
      .selectFrom('webhook_events')
      .select('id')
      .where('type', '=', 'control.updated')
      .execute();
    assert.equal(count.length, 1, 'unchanged and refused changes publish nothing');
  });

  it('lets a member change a control, and answers 404 for another workspace', async (t) => {
    const owner = await signedInOwner(t);
    await owner.fixture.runtime.database.db
      .updateTable('workspace_members')
      .set({ role: 'member' })
      .where('workspace_id', '=', owner.workspaceId)
      .execute();
    const all = await controls(owner);
    await owner.client.get(`${owner.page}/controls`);
    const changed = await owner.client.post(`${owner.page}/controls/${all[3]?.id}`, {
      status: 'implemented',
      owner_id: '',
    });
    assert.equal(changed.status, 303);
    assert.equal((await owner.api('GET', `/controls/${all[3]?.id}`)).body.status, 'implemented');

    const theirs = await owner.fixture.provision({ email: 'other@example.com' });
    const created = await createApiKey(
      owner.fixture.runtime.database.db,
      owner.fixture.runtime.clock,
      { workspaceId: theirs.workspaceId, name: 'Theirs' },
      OPERATOR_SOURCE,
    );
    assert.ok(created.ok);
    const { key } = created.value;
    const theirControls = JSON.parse(
      (
        await owner.fixture.runtime.app.inject({
          url: '/api/v1/controls',
          headers: { authorization: `Bearer ${key}` },
        })
      ).body,
    ).data;
    for (const path of [`/w/${theirs.workspaceId}`, `/w/${theirs.workspaceId}/controls`]) {
      const page = await owner.client.get(path);
      assert.equal(page.status, 404, path);
      assert.match(page.body, /<meta name="error-code" content="not_found">/);
    }
    await owner.client.get(`${owner.page}/controls`);
    for (const path of [
      `/w/${theirs.workspaceId}/controls/${theirControls[0].id}`,
      `${owner.page}/controls/${theirControls[0].id}`,
    ]) {
      const posted = await owner.client.post(path, { status: 'implemented', owner_id: '' });
      assert.equal(posted.status, 404, path);
    }
    const untouched = await owner.fixture.runtime.app.inject({
      url: `/api/v1/controls/${theirControls[0].id}`,
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(JSON.parse(untouched.body).status, 'not_started');
  });

  it('renders stored script in task, risk, evidence and person names as text', async (t) => {
    const owner = await signedInOwner(t);
    const all = await controls(owner);
    const person = await owner.api('POST', '/people', { email: 'eve@example.com', name: PLANTED });
    await owner.api('PATCH', `/controls/${all[0]?.id}`, { owner_id: person.body.id });
    assert.equal((await owner.api('POST', '/tasks', { title: PLANTED, control_id: all[0]?.id })).status, 201);
    assert.equal(
      (await owner.api('POST', '/risks', { title: PLANTED, likelihood: 4, impact: 4 })).status,
      201,
    );
    assert.equal(
      (await owner.api('POST', '/evidence', { title: PLANTED, url: 'https://wiki.example.com/x' })).status,
      201,
    );
    for (const path of [owner.page, `${owner.page}/controls`]) {
      const page = await owner.client.get(path);
      assert.equal(page.status, 200);
      assert.doesNotMatch(page.body, /<script>alert|<img src=x/, path);
      assert.match(page.body, /&lt;script&gt;alert\(&#39;x&#39;\)&lt;\/script&gt;/, path);
    }
  });
});
