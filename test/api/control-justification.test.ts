// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type ApiFixture, publishedEvents, startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

interface Control {
  id: string;
  reference: string;
  status: string;
  justification: string | null;
}

async function controlAt(api: ApiFixture, reference: string, key = api.org.key): Promise<Control> {
  return (await api.call('GET', `/controls?q=${reference}&limit=1`, { key })).body.data[0];
}

function assertJustificationRequired(response: { status: number; body: Record<string, unknown> }) {
  assert.equal(response.status, 400, JSON.stringify(response.body));
  assert.equal(response.body.code, 'justification_required');
  assert.deepEqual(response.body.errors, [
    { path: 'body/justification', message: 'is required when the status is not_applicable' },
  ]);
}

describe(`control justification on ${testDialect}`, () => {
  it('is null at first, stored and returned, and is required to mark a control not_applicable', async (t) => {
    const api = await startApiFixture(t);
    const control = await controlAt(api, 'A.7.1');
    assert.equal(control.justification, null);

    assertJustificationRequired(
      await api.call('PATCH', `/controls/${control.id}`, { json: { status: 'not_applicable' } }),
    );
    for (const justification of ['', '   ', null]) {
      assertJustificationRequired(
        await api.call('PATCH', `/controls/${control.id}`, {
          json: { status: 'not_applicable', justification },
        }),
      );
    }
    assert.equal((await api.call('GET', `/controls/${control.id}`)).body.status, 'not_started');
    assert.deepEqual(await publishedEvents(api), [], 'a refused change publishes nothing');

    const excluded = await api.call('PATCH', `/controls/${control.id}`, {
      json: { status: 'not_applicable', justification: 'No offices: everyone works remotely.' },
    });
    assert.equal(excluded.status, 200);
    assert.deepEqual(
      [excluded.body.status, excluded.body.justification],
      ['not_applicable', 'No offices: everyone works remotely.'],
    );
    assert.deepEqual((await api.call('GET', `/controls/${control.id}`)).body, excluded.body);

    // A control excluded stays excluded only with a reason: clearing it is refused.
    assertJustificationRequired(
      await api.call('PATCH', `/controls/${control.id}`, { json: { justification: null } }),
    );
    assertJustificationRequired(
      await api.call('PATCH', `/controls/${control.id}`, { json: { justification: ' ' } }),
    );
    const reworded = await api.call('PATCH', `/controls/${control.id}`, {
      json: { justification: 'Fully remote company: no premises.' },
    });
    assert.equal(reworded.status, 200);
    assert.equal(reworded.body.justification, 'Fully remote company: no premises.');

    const included = await api.call('PATCH', `/controls/${control.id}`, { json: { status: 'in_progress' } });
    assert.equal(included.status, 200);
    assert.equal(included.body.justification, 'Fully remote company: no premises.', 'kept');
    const again = await api.call('PATCH', `/controls/${control.id}`, { json: { status: 'not_applicable' } });
    assert.equal(again.status, 200, 'the stored justification is enough');
    const cleared = await api.call('PATCH', `/controls/${control.id}`, {
      json: { status: 'implemented', justification: null },
    });
    assert.deepEqual([cleared.status, cleared.body.justification], [200, null]);
  });

  it('records each change with the API key as the actor and what changed', async (t) => {
    const api = await startApiFixture(t);
    const control = await controlAt(api, 'A.7.1');
    await api.call('PATCH', `/controls/${control.id}`, {
      json: { status: 'not_applicable', justification: 'No offices.' },
    });
    api.runtime.clock.advance(1000);
    await api.call('PATCH', `/controls/${control.id}`, { json: { notes: 'Checked in the 2026 review.' } });
    const events = (await api.call('GET', `/audit-events?target_id=${control.id}`)).body.data;
    assert.deepEqual(
      events.map((event: { action: string; target: unknown; changes: unknown }) => [
        event.action,
        event.target,
        event.changes,
      ]),
      [
        [
          'control.updated',
          { type: 'control', id: control.id, label: 'A.7.1 Physical security perimeters' },
          { notes: { from: null, to: 'Checked in the 2026 review.' } },
        ],
        [
          'control.updated',
          { type: 'control', id: control.id, label: 'A.7.1 Physical security perimeters' },
          {
            status: { from: 'not_started', to: 'not_applicable' },
            justification: { from: null, to: 'No offices.' },
          },
        ],
      ],
    );
    for (const event of events) {
      assert.equal(event.actor.api_key_id, api.org.keyId);
      assert.match(event.actor.label, /^API key /);
    }
    const published = await publishedEvents(api);
    assert.deepEqual(
      published.map((event) => [event.type, event.data.justification]),
      [
        ['control.updated', 'No offices.'],
        ['control.updated', 'No offices.'],
      ],
    );
  });

  it('is found by its Annex A reference as well as by its id, in its own workspace only', async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const control = await controlAt(api, 'A.5.1');
    const byReference = await api.call('GET', '/controls/A.5.1');
    assert.equal(byReference.status, 200);
    assert.deepEqual(byReference.body, (await api.call('GET', `/controls/${control.id}`)).body);
    assert.equal(byReference.body.id, control.id);
    const theirs = await api.call('GET', '/controls/A.5.1', { key: other.key });
    assert.notEqual(theirs.body.id, control.id, 'each workspace has its own A.5.1');
    assert.equal((await api.call('GET', '/controls/A.99.1')).status, 404);
    assert.equal((await api.call('GET', '/controls/a.5.1')).status, 404, 'references are exact');
  });

  it("answers 404 for another workspace's control and 400 for a justification too long", async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other');
    const theirs = await controlAt(api, 'A.7.1', other.key);
    const foreign = await api.call('PATCH', `/controls/${theirs.id}`, {
      json: { status: 'not_applicable', justification: 'Not ours to say.' },
    });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.code, 'not_found');
    assert.equal((await api.call('GET', `/controls/${theirs.id}`)).status, 404);
    assert.equal(
      (await api.call('GET', `/controls/${theirs.id}`, { key: other.key })).body.status,
      'not_started',
    );

    const mine = await controlAt(api, 'A.7.1');
    for (const justification of ['x'.repeat(10_001), 42, '\u0000']) {
      const response = await api.call('PATCH', `/controls/${mine.id}`, { json: { justification } });
      assert.equal(response.status, 400, JSON.stringify(justification));
      assert.equal(response.body.code, 'invalid_request');
      assert.ok(response.body.errors.some((e: { path: string }) => e.path === 'body/justification'));
    }
  });
});
