// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { signedInOwner } from '../helpers/web.ts';

describe(`a control's page on ${testDialect}`, () => {
  it('shows the control, takes its status, owner, notes and justification, and tells its history', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const ada = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada Lovelace' })).body;
    const control = (await owner.api('GET', '/controls/A.7.1')).body;
    const url = `${page}/controls/A.7.1`;

    const list = await client.get(`${page}/controls?q=A.7.1`);
    assert.match(
      list.body,
      new RegExp(
        `<a href="${url}"><span class="control-ref">A\\.7\\.1</span> Physical security perimeters</a>`,
      ),
    );

    const byId = await client.get(`${page}/controls/${control.id}`);
    assert.equal(byId.status, 301);
    assert.equal(byId.location, url);

    const shown = await client.get(url);
    assert.equal(shown.status, 200);
    assert.match(
      shown.body,
      /<h1><span class="control-ref">A\.7\.1<\/span> Physical security perimeters<\/h1>/,
    );
    assert.match(shown.body, /<dt>Theme<\/dt><dd>Physical<\/dd>/);
    assert.match(shown.body, /Required to mark it not applicable\./);

    const refused = await client.post(`${url}/details`, {
      status: 'not_applicable',
      owner_id: ada.id,
      notes: 'Remote company',
      justification: '  ',
    });
    assert.equal(refused.status, 400);
    assert.match(
      refused.body,
      /<a href="#justification">Say why the control is not applicable before marking it so\.<\/a>/,
    );
    assert.match(refused.body, /id="justification" name="justification"[^>]*aria-invalid="true"/);
    assert.match(refused.body, /Remote company<\/textarea>/);
    assert.equal((await owner.api('GET', `/controls/${control.id}`)).body.status, 'not_started');

    const saved = await client.post(`${url}/details`, {
      status: 'not_applicable',
      owner_id: ada.id,
      notes: 'Remote company',
      justification: 'No offices of our own.',
    });
    assert.equal(saved.status, 303, saved.body);
    assert.equal(saved.location, `${url}?notice=updated`);
    const viaApi = (await owner.api('GET', `/controls/${control.id}`)).body;
    assert.deepEqual(
      [viaApi.status, viaApi.owner_id, viaApi.notes, viaApi.justification],
      ['not_applicable', ada.id, 'Remote company', 'No offices of our own.'],
    );
    const after = await client.get(saved.location ?? '');
    assert.match(after.body, /Control updated\./);
    assert.match(after.body, /<dt>Owner<\/dt><dd>Ada Lovelace<\/dd>/);
    assert.match(after.body, /<strong>Control changed<\/strong> by owner@example\.com/);
    assert.match(after.body, /justification: <del>—<\/del> → <ins>No offices of our own\.<\/ins>/);

    const audit = (await owner.api('GET', `/audit-events?target_id=${control.id}`)).body.data;
    assert.equal(audit[0].action, 'control.updated');
    assert.equal(audit[0].actor.label, 'owner@example.com');

    const bad = await client.post(`${url}/details`, {
      status: 'done',
      owner_id: 'per_x',
      notes: '',
      justification: '',
    });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /Choose a status from the list\./);
    const gone = await client.post(`${url}/details`, {
      status: 'in_progress',
      owner_id: 'per_nobody',
      notes: '',
      justification: '',
    });
    assert.equal(gone.status, 409);
    assert.match(gone.body, /Choose the owner from the list\./);
  });

  it('links and unlinks evidence, lists its open tasks and risks, and names controls in histories', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const a515 = (await owner.api('GET', '/controls/A.5.15')).body;
    const a82 = (await owner.api('GET', '/controls/A.8.2')).body;
    const url = `${page}/controls/A.5.15`;
    const older = (
      await owner.api('POST', '/evidence', {
        title: 'Older',
        url: 'https://e.example.com/1',
        control_ids: [a515.id],
      })
    ).body;
    const free = (
      await owner.api('POST', '/evidence', { title: 'Unlinked wiki', url: 'https://e.example.com/2' })
    ).body;
    await owner.api('POST', '/tasks', { title: 'Review admin access', control_id: a515.id });
    const done = (await owner.api('POST', '/tasks', { title: 'Done already', control_id: a515.id })).body;
    await owner.api('PATCH', `/tasks/${done.id}`, { status: 'completed' });
    const risk = (
      await owner.api('POST', '/risks', {
        title: 'Stale accounts',
        likelihood: 3,
        impact: 4,
        control_ids: [a515.id, a82.id],
      })
    ).body;

    const shown = await client.get(url);
    assert.match(shown.body, new RegExp(`<a href="${page}/evidence/${older.id}">Older</a>`));
    assert.match(shown.body, new RegExp(`<option value="${free.id}">Unlinked wiki</option>`));
    assert.doesNotMatch(shown.body, new RegExp(`<option value="${older.id}">`));
    assert.match(shown.body, /Review admin access/);
    assert.doesNotMatch(shown.body, /Done already/);
    assert.match(shown.body, new RegExp(`<a href="${page}/risks/${risk.id}">Stale accounts</a>`));

    const linked = await client.post(`${url}/evidence/link`, { evidence_id: free.id });
    assert.equal(linked.status, 303);
    assert.deepEqual((await owner.api('GET', `/evidence/${free.id}`)).body.control_ids, [a515.id]);
    assert.equal(linked.location, `${url}?notice=linked#evidence-title`);
    const newestFirst = (await client.get(`${url}?notice=linked`)).body;
    assert.ok(newestFirst.indexOf('>Unlinked wiki</a>') < newestFirst.indexOf('>Older</a>'));
    assert.match(newestFirst, /Evidence linked\./);

    const unlinked = await client.post(`${url}/evidence/unlink`, { evidence_id: older.id });
    assert.equal(unlinked.status, 303);
    assert.deepEqual((await owner.api('GET', `/evidence/${older.id}`)).body.control_ids, []);
    const history = (await client.get(`${page}/evidence/${older.id}`)).body;
    assert.match(history, /controls: <del>A\.5\.15<\/del> → <ins>—<\/ins>/);
    const riskHistory = (await client.get(`${page}/risks/${risk.id}`)).body;
    assert.match(riskHistory, /Risk created/);

    await owner.api('PATCH', `/risks/${risk.id}`, { control_ids: [a82.id] });
    assert.match(
      (await client.get(`${page}/risks/${risk.id}`)).body,
      /controls: <del>A\.5\.15, A\.8\.2<\/del> → <ins>A\.8\.2<\/ins>/,
    );

    const unknown = await client.post(`${url}/evidence/link`, { evidence_id: 'evd_nope' });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body, /Choose the evidence from the list\./);
    const other = await owner.fixture.provision({ email: 'other@example.com' });
    const foreign = await owner.fixture.runtime.database.db
      .insertInto('evidence')
      .values({
        id: 'evd_foreign',
        workspace_id: other.workspaceId,
        kind: 'link',
        title: 'Theirs',
        url: 'https://e.example.com/x',
        file_name: null,
        file_size: null,
        file_sha256: null,
        content_type: null,
        storage_key: null,
        retired_at: null,
        created_at: 1,
        updated_at: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    assert.equal((await client.post(`${url}/evidence/link`, { evidence_id: foreign.id })).status, 400);
    assert.equal((await client.get(`${page}/controls/A.99.1`)).status, 404);
    assert.equal((await client.get(`/w/${other.workspaceId}/controls/A.5.15`)).status, 404);
    assert.equal(
      (await client.post(`${page}/controls/A.99.1/details`, { status: 'implemented' })).status,
      404,
    );
  });

  it('points the list to the control page when an exclusion needs a justification', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const control = (await owner.api('GET', '/controls/A.7.1')).body;
    await client.get(`${page}/controls`);
    const refused = await client.post(`${page}/controls/${control.id}`, {
      status: 'not_applicable',
      owner_id: '',
    });
    assert.equal(refused.status, 400);
    assert.match(
      refused.body,
      new RegExp(`<a href="${page}/controls/${control.id}">Justify it on the control's page\\.</a>`),
    );
    // A control excluded before justifications existed.
    await owner.fixture.runtime.database.db
      .updateTable('controls')
      .set({ status: 'not_applicable' })
      .where('id', '=', control.id)
      .execute();
    const list = await client.get(`${page}/controls?q=A.7.1`);
    assert.match(
      list.body,
      /href="[^"]+\/controls\/A\.7\.1#justification">Justify on the control's page<\/a>/,
    );
  });
});
