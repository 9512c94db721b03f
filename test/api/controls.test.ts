// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import annexA from '../../src/compliance/iso27001-2022-annex-a.json' with { type: 'json' };
import { startApiFixture, walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Control {
  id: string;
  reference: string;
  title: string;
  theme: string;
  status: string;
  owner_id: string | null;
  notes: string | null;
  updated_at: string;
}

describe(`controls on ${testDialect}`, () => {
  it('seed each workspace with the 93 Annex A controls, listed in the order of the standard', async (t) => {
    const api = await startApiFixture(t);
    const { items, pages } = await walkPages<Control>(api, '/controls?limit=40');
    assert.equal(pages, 3);
    assert.deepEqual(
      items.map((c) => [c.reference, c.title, c.theme]),
      annexA.map((c) => [`A.${c.id}`, c.title, c.theme]),
    );
    assert.ok(items.every((c) => c.status === 'not_started' && c.owner_id === null));
    const other = await api.createOrganization('Other');
    const theirs = await walkPages<Control>(api, '/controls?limit=200', { key: other.key });
    assert.equal(theirs.items.length, 93);
    assert.equal(
      new Set([...items, ...theirs.items].map((c) => c.id)).size,
      186,
      'each workspace has its own',
    );
  });

  it('come with a workspace bought moments ago, whichever read uses it first, several at once', async (t) => {
    const api = await startApiFixture(t);
    const fresh = await api.createOrganization('Fresh');
    const as = { key: fresh.key };
    const [list, byReference, readiness, soa, again] = await Promise.all([
      api.call('GET', '/controls?limit=200', as),
      api.call('GET', '/controls/A.5.1', as),
      api.call('GET', '/readiness', as),
      api.call('GET', '/soa', as),
      api.call('GET', '/controls?limit=200', as),
    ]);
    assert.deepEqual(
      [list, byReference, readiness, soa, again].map((answer) => answer.status),
      [200, 200, 200, 200, 200],
    );
    const ids = list.body.data.map((c: Control) => c.id);
    assert.equal(ids.length, 93);
    assert.deepEqual(
      again.body.data.map((c: Control) => c.id),
      ids,
      'one set of controls, the one every first use saw',
    );
    assert.equal(byReference.body.id, ids[0]);
    assert.equal(readiness.body.total, 93);
    assert.deepEqual(
      soa.body.controls.map((c: { reference: string }) => c.reference),
      annexA.map((c) => `A.${c.id}`),
    );
    const patched = await api.call('PATCH', `/controls/${ids[1]}`, {
      ...as,
      json: { status: 'in_progress' },
    });
    assert.equal(patched.status, 200);
    assert.equal((await api.call('GET', '/readiness', as)).body.by_status.in_progress, 1);
  });

  it('search reference and title with q, case-insensitively and literally', async (t) => {
    const api = await startApiFixture(t);
    const search = async (q: string) =>
      (await api.call('GET', `/controls?q=${encodeURIComponent(q)}`)).body.data.map(
        (c: Control) => c.reference,
      );
    assert.deepEqual(await search('a.8.2'), [
      'A.8.2',
      'A.8.20',
      'A.8.21',
      'A.8.22',
      'A.8.23',
      'A.8.24',
      'A.8.25',
      'A.8.26',
      'A.8.27',
      'A.8.28',
      'A.8.29',
    ]);
    assert.deepEqual(await search('CLOUD'), ['A.5.23']);
    assert.deepEqual(await search('_'), [], 'an underscore is not a wildcard');
    assert.deepEqual(await search('%'), [], 'a percent sign is not a wildcard');
  });

  it('change status, owner and notes, and filter by them', async (t) => {
    const api = await startApiFixture(t);
    const person = (await api.call('POST', '/people', { json: { email: 'ciso@example.com', name: 'Ines' } }))
      .body;
    const [first, second] = (await api.call('GET', '/controls?limit=2')).body.data as Control[];
    api.runtime.clock.advance(1000);
    const updated = await api.call('PATCH', `/controls/${first?.id}`, {
      json: { status: 'implemented', owner_id: person.id, notes: 'Policy approved by the board.' },
    });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.status, 'implemented');
    assert.equal(updated.body.owner_id, person.id);
    assert.equal(updated.body.notes, 'Policy approved by the board.');
    assert.notEqual(updated.body.updated_at, first?.updated_at);
    await api.call('PATCH', `/controls/${second?.id}`, {
      json: { status: 'not_applicable', justification: 'No offices of our own.' },
    });

    const byStatus = await api.call('GET', '/controls?status=implemented');
    assert.deepEqual(
      byStatus.body.data.map((c: Control) => c.id),
      [first?.id],
    );
    const byOwner = await api.call('GET', `/controls?owner_id=${person.id}`);
    assert.deepEqual(
      byOwner.body.data.map((c: Control) => c.id),
      [first?.id],
    );
    const byTheme = await api.call('GET', '/controls?theme=people&limit=200');
    assert.equal(byTheme.body.data.length, 8);

    const cleared = await api.call('PATCH', `/controls/${first?.id}`, {
      json: { owner_id: null, notes: null },
    });
    assert.deepEqual([cleared.body.owner_id, cleared.body.notes], [null, null]);
    assert.equal((await api.call('GET', `/controls/${first?.id}`)).body.status, 'implemented');
  });

  it('publish control.updated only when something changed', async (t) => {
    const api = await startApiFixture(t);
    const [control] = (await api.call('GET', '/controls?limit=1')).body.data as Control[];
    await api.call('PATCH', `/controls/${control?.id}`, { json: { status: 'in_progress' } });
    await api.call('PATCH', `/controls/${control?.id}`, { json: { status: 'in_progress' } });
    const events = await api.runtime.database.db.selectFrom('webhook_events').selectAll().execute();
    assert.deepEqual(
      events.map((e) => e.type),
      ['control.updated'],
    );
    const payload = JSON.parse(events[0]?.payload ?? '{}');
    assert.equal(payload.workspace_id, api.org.workspaceId);
    assert.deepEqual([payload.data.id, payload.data.status], [control?.id, 'in_progress']);
  });

  it('refuse bad changes with 400 naming the field', async (t) => {
    const api = await startApiFixture(t);
    const [control] = (await api.call('GET', '/controls?limit=1')).body.data as Control[];
    const cases: [unknown, string][] = [
      [{ status: 'done' }, 'body/status'],
      [{}, 'body'],
      [{ reference: 'A.1' }, 'body/reference'],
      [{ notes: 'x'.repeat(10_001) }, 'body/notes'],
    ];
    for (const [json, path] of cases) {
      const response = await api.call('PATCH', `/controls/${control?.id}`, { json });
      assert.equal(response.status, 400, JSON.stringify(json));
      assert.equal(response.body.code, 'invalid_request');
      assert.ok(
        response.body.errors.some((e: { path: string }) => e.path === path),
        JSON.stringify(response.body),
      );
    }
    const badQuery = await api.call('GET', '/controls?status=nope&colour=red');
    assert.equal(badQuery.status, 400);
    assert.deepEqual(badQuery.body.errors.map((e: { path: string }) => e.path).sort(), [
      'querystring/colour',
      'querystring/status',
    ]);
  });

  it('keep each organization to its own controls and people', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const [mine] = (await api.call('GET', '/controls?limit=1')).body.data as Control[];
    const [theirs] = (await api.call('GET', '/controls?limit=1', { key: other.key })).body.data as Control[];
    const theirPerson = (
      await api.call('POST', '/people', { key: other.key, json: { email: 'x@other.example' } })
    ).body;

    assert.equal((await api.call('GET', `/controls/${theirs?.id}`)).status, 404);
    assert.equal(
      (await api.call('PATCH', `/controls/${theirs?.id}`, { json: { status: 'implemented' } })).status,
      404,
    );
    const foreignOwner = await api.call('PATCH', `/controls/${mine?.id}`, {
      json: { owner_id: theirPerson.id },
    });
    assert.equal(foreignOwner.status, 404);
    assert.equal(foreignOwner.body.code, 'reference_not_found');
    assert.deepEqual(foreignOwner.body.errors, [
      { path: 'body/owner_id', message: 'no such person in this workspace' },
    ]);
    assert.equal(
      (await api.call('GET', `/controls/${theirs?.id}`, { key: other.key })).body.status,
      'not_started',
    );
    assert.equal((await api.call('GET', `/controls?owner_id=${theirPerson.id}`)).body.data.length, 0);
  });
});

describe(`readiness on ${testDialect}`, () => {
  it('counts controls per status and theme, and the percentage implemented of applicable ones', async (t) => {
    const api = await startApiFixture(t);
    const empty = await api.call('GET', '/readiness');
    assert.equal(empty.status, 200);
    assert.deepEqual(
      [empty.body.total, empty.body.applicable, empty.body.implemented, empty.body.percent_implemented],
      [93, 93, 0, 0],
    );
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(empty.body.by_theme as Record<string, { total: number }>).map(([theme, r]) => [
          theme,
          r.total,
        ]),
      ),
      { organizational: 37, people: 8, physical: 14, technological: 34 },
    );

    const controls = (await api.call('GET', '/controls?theme=people&limit=8')).body.data as Control[];
    for (const control of controls.slice(0, 3)) {
      await api.call('PATCH', `/controls/${control.id}`, { json: { status: 'implemented' } });
    }
    await api.call('PATCH', `/controls/${controls[3]?.id}`, {
      json: { status: 'not_applicable', justification: 'No staff of our own.' },
    });
    await api.call('PATCH', `/controls/${controls[4]?.id}`, { json: { status: 'in_progress' } });

    const readiness = (await api.call('GET', '/readiness')).body;
    assert.deepEqual(readiness.by_status, {
      not_started: 88,
      in_progress: 1,
      implemented: 3,
      not_applicable: 1,
    });
    assert.deepEqual([readiness.applicable, readiness.implemented], [92, 3]);
    assert.equal(readiness.percent_implemented, 3.3);
    assert.deepEqual(readiness.by_theme.people, {
      total: 8,
      by_status: { not_started: 3, in_progress: 1, implemented: 3, not_applicable: 1 },
      percent_implemented: 42.9,
    });
    assert.equal(readiness.by_theme.physical.percent_implemented, 0);
  });
});
