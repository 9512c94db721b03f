// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

describe(`PATCH /api/v1/me on ${testDialect}`, () => {
  it('renames the organization: answers what GET /me answers, records the key in the audit log, sends workspace.renamed', async (t) => {
    const api = await startApiFixture(t);
    const renamed = await api.call('PATCH', '/me', {
      json: { organization: { name: '  Acme Holdings Ltd  ' } },
      headers: { 'user-agent': 'rename-test' },
    });
    assert.equal(renamed.status, 200, JSON.stringify(renamed.body));
    assert.deepEqual(renamed.body.organization, { id: api.org.workspaceId, name: 'Acme Holdings Ltd' });
    const me = await api.call('GET', '/me');
    assert.deepEqual(me.body, renamed.body);

    const db = api.runtime.database.db;
    const events = await db
      .selectFrom('audit_events')
      .selectAll()
      .where('workspace_id', '=', api.org.workspaceId)
      .where('action', '=', 'workspace.renamed')
      .execute();
    assert.equal(events.length, 1);
    const [event] = events;
    assert.equal(event?.actor_api_key_id, api.org.keyId);
    assert.equal(event?.actor_user_id, null);
    assert.match(event?.actor_label ?? '', /^API key “test key”/);
    assert.equal(event?.target_type, 'workspace');
    assert.equal(event?.target_id, api.org.workspaceId);
    assert.equal(event?.target_label, 'Acme Ltd → Acme Holdings Ltd');
    assert.equal(event?.user_agent, 'rename-test');

    const sent = await db
      .selectFrom('webhook_events')
      .select('payload')
      .where('workspace_id', '=', api.org.workspaceId)
      .where('type', '=', 'workspace.renamed')
      .execute();
    assert.equal(sent.length, 1);
    assert.deepEqual(JSON.parse(sent[0]?.payload ?? '{}').data, {
      previous_name: 'Acme Ltd',
      name: 'Acme Holdings Ltd',
    });

    const audit = await api.call('GET', '/audit-events?action=workspace.renamed');
    assert.equal(audit.status, 200, JSON.stringify(audit.body));
    assert.equal(audit.body.data.length, 1);
  });

  it('changes nothing, records nothing and sends nothing for the same name again', async (t) => {
    const api = await startApiFixture(t);
    const same = await api.call('PATCH', '/me', { json: { organization: { name: 'Acme Ltd ' } } });
    assert.equal(same.status, 200);
    assert.equal(same.body.organization.name, 'Acme Ltd');
    const db = api.runtime.database.db;
    const events = await db
      .selectFrom('webhook_events')
      .select('id')
      .where('type', '=', 'workspace.renamed')
      .execute();
    const audited = await db
      .selectFrom('audit_events')
      .select('id')
      .where('action', '=', 'workspace.renamed')
      .execute();
    assert.deepEqual([events.length, audited.length], [0, 0]);
  });

  it('refuses an empty, too long or control-character name with 400 invalid_request at body/organization/name, changing nothing', async (t) => {
    const api = await startApiFixture(t);
    const refused = [
      '',
      '   ',
      'x'.repeat(101),
      `${'y'.repeat(100)}z`,
      'Acme\nLtd',
      'Acme\u0000Ltd',
      'Acme\u0007',
      '\u202eevil',
      'Acme\u2066Ltd',
      'Acme\u0085Ltd',
      '\ud800Acme',
    ];
    for (const name of refused) {
      const answer = await api.call('PATCH', '/me', { json: { organization: { name } } });
      assert.equal(answer.status, 400, `${JSON.stringify(name)}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.code, 'invalid_request');
      assert.equal(answer.body.errors[0]?.path, 'body/organization/name', JSON.stringify(name));
    }
    for (const body of [
      {},
      { organization: {} },
      { organization: { name: 'A', plan: 'pro' } },
      { name: 'A' },
    ]) {
      const answer = await api.call('PATCH', '/me', { json: body });
      assert.equal(answer.status, 400, JSON.stringify(body));
      assert.equal(answer.body.code, 'invalid_request');
    }
    const me = await api.call('GET', '/me');
    assert.equal(me.body.organization.name, 'Acme Ltd');
  });

  it('accepts exactly 100 characters after trimming, counted as characters (an emoji is one)', async (t) => {
    const api = await startApiFixture(t);
    const hundred = `\t ${'é'.repeat(98)}🙂x \n`;
    const answer = await api.call('PATCH', '/me', { json: { organization: { name: hundred } } });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.organization.name, `${'é'.repeat(98)}🙂x`);
  });

  it("renames only the key's own organization, and needs a key", async (t) => {
    const api = await startApiFixture(t);
    const other = await api.createOrganization('Other Org');
    const renamed = await api.call('PATCH', '/me', {
      key: other.key,
      json: { organization: { name: 'Other Org Renamed' } },
    });
    assert.equal(renamed.status, 200);
    const mine = await api.call('GET', '/me');
    assert.equal(mine.body.organization.name, 'Acme Ltd');
    const anonymous = await api.call('PATCH', '/me', { key: null, json: { organization: { name: 'X' } } });
    assert.equal(anonymous.status, 401);
  });
});
