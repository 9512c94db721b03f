// db-scope: sqlite

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { getControl } from '../../src/compliance/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startAppFixture, webClient } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

describe(`the controls page's status form on ${testDialect}`, () => {
  it('refuses not_applicable without a justification as a form error, and records the member as the actor', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com' });
    const client = webClient(fixture.runtime.app, new URL(fixture.baseUrl).origin);
    await client.get(invitationPath);
    assert.equal((await client.post(`${invitationPath}/accept`, { password: PASSWORD })).status, 303);
    const deps = { db: fixture.runtime.database.db, clock: fixture.runtime.clock };
    const control = await getControl(deps, workspaceId, 'A.7.1');
    assert.ok(control);
    await client.get(`/w/${workspaceId}/controls`);

    const refused = await client.post(`/w/${workspaceId}/controls/${control.id}`, {
      status: 'not_applicable',
      owner_id: '',
    });
    assert.equal(refused.status, 400);
    assert.match(refused.body, /Say why the control is not applicable before marking it so\./);
    assert.equal((await getControl(deps, workspaceId, control.id))?.status, 'not_started');

    const accepted = await client.post(`/w/${workspaceId}/controls/${control.id}`, {
      status: 'not_applicable',
      owner_id: '',
      justification: 'No offices of our own.',
    });
    assert.equal(accepted.status, 303, accepted.body);
    const stored = await getControl(deps, workspaceId, control.id);
    assert.deepEqual([stored?.status, stored?.justification], ['not_applicable', 'No offices of our own.']);

    const created = await createApiKey(deps.db, deps.clock, { workspaceId, name: 'Reader' }, OPERATOR_SOURCE);
    assert.ok(created.ok);
    const events = await fixture.runtime.app.inject({
      method: 'GET',
      url: `/api/v1/audit-events?target_id=${control.id}`,
      headers: { authorization: `Bearer ${created.value.key}` },
    });
    const [event] = JSON.parse(events.body).data;
    assert.equal(event.action, 'control.updated');
    assert.equal(event.actor.label, 'owner@example.com');
    assert.deepEqual(event.changes, {
      status: { from: 'not_started', to: 'not_applicable' },
      justification: { from: null, to: 'No offices of our own.' },
    });
  });
});
