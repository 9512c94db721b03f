// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, type SignedInOwner, signedInOwner, type WebClient } from '../helpers/web.ts';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

async function invitedMember(owner: SignedInOwner, email: string): Promise<WebClient> {
  await owner.client.get(`${owner.page}/members`);
  const sent = await owner.client.post(`${owner.page}/members/invitations`, { email, role: 'member' });
  assert.equal(sent.status, 303, sent.body);
  return acceptAsNewAccount(owner.fixture.runtime.app, await owner.fixture.latestInvitationPath(email));
}

describe(`the Statement of Applicability and treatment plan pages on ${testDialect}`, () => {
  it('shows gaps, refuses approval while they remain, approves for owners only, and serves every version', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    // An exclusion from before justifications were required: the app no longer lets one be made.
    assert.equal(
      (await client.get(`${page}/controls/A.7.4`)).status,
      200,
      'the first use seeds the controls',
    );
    await fixture.runtime.database.db
      .updateTable('controls')
      .set({ status: 'not_applicable', justification: null })
      .where('workspace_id', '=', owner.workspaceId)
      .where('reference', '=', 'A.7.4')
      .execute();

    const soa = await client.get(`${page}/soa`);
    assert.equal(soa.status, 200);
    assert.match(soa.body, /Gaps to close before approval/);
    assert.match(
      soa.body,
      /A\.7\.4<\/span> Physical security monitoring<\/a>: excluded without a justification/,
    );
    assert.match(soa.body, /Not approved yet\./);
    assert.equal((soa.body.match(/<th scope="row" data-label="Control">/g) ?? []).length, 93);

    const refused = await client.post(`${page}/soa/approve`, {});
    assert.equal(refused.status, 409);
    assert.match(refused.body, /Not approved: 1 excluded control has no justification/);
    assert.deepEqual((await owner.api('GET', '/soa/versions')).body, { data: [] });

    const { id } = (await owner.api('GET', '/controls/A.7.4')).body;
    assert.equal(
      (
        await owner.api('PATCH', `/controls/${id}`, {
          justification: 'Cloud-hosted: nothing of ours to watch.',
        })
      ).status,
      200,
    );
    await client.get(`${page}/soa`);
    const approved = await client.post(`${page}/soa/approve`, {});
    assert.deepEqual([approved.status, approved.location], [303, `${page}/soa?notice=approved`]);
    const after = await client.get(approved.location ?? '');
    assert.match(after.body, /Approved: the Statement of Applicability is kept as this version for good\./);
    assert.match(after.body, /Version 1, approved .* by owner@example\.com\. Nothing has changed since\./);
    assert.doesNotMatch(after.body, /Gaps to close/);
    const again = await client.post(`${page}/soa/approve`, {});
    assert.equal(again.location, `${page}/soa?notice=nothing_to_approve`);

    const version = (await owner.api('GET', '/soa/versions/1')).body;
    for (const file of version.files as { format: string; size: number }[]) {
      const got = await fixture.runtime.app.inject({
        url: `${page}/soa/versions/1/files/${file.format}`,
        headers: { cookie: [...client.cookies].map(([name, value]) => `${name}=${value}`).join('; ') },
      });
      assert.equal(got.statusCode, 200);
      assert.equal(got.rawPayload.length, file.size);
      assert.match(
        String(got.headers['content-disposition']),
        new RegExp(`statement-of-applicability-v1\\.${file.format}`),
      );
      assert.equal(got.headers['x-content-type-options'], 'nosniff');
    }
    for (const path of [
      '/soa/versions/2/files/pdf',
      '/soa/versions/0/files/pdf',
      '/soa/versions/1/files/docx',
      '/soa/files/exe',
    ]) {
      const response = await client.get(`${page}${path}`);
      assert.deepEqual([response.status, errorCodeOf(response.body)], [404, 'not_found'], path);
    }

    const member = await invitedMember(owner, 'grace@example.com');
    const memberView = await member.get(`${page}/soa`);
    assert.equal(memberView.status, 200);
    assert.match(memberView.body, /Owners and admins approve the Statement of Applicability\./);
    assert.doesNotMatch(memberView.body, /Approve as version/);
    const forbidden = await member.post(`${page}/soa/approve`, {});
    assert.equal(forbidden.status, 403);
    assert.equal((await owner.api('GET', '/soa/versions')).body.data.length, 1);

    const other = await fixture.provision({ email: 'eve@example.com', name: 'Other Ltd' });
    const stranger = { client: await acceptAsNewAccount(fixture.runtime.app, other.invitationPath) };
    assert.equal((await stranger.client.get(`/w/${other.workspaceId}/soa`)).status, 200);
    for (const path of [
      '/soa',
      '/soa/files/pdf',
      '/soa/versions/1/files/csv',
      '/treatment-plan',
      '/treatment-plan/files/xlsx',
    ]) {
      const response = await stranger.client.get(`${page}${path}`);
      assert.equal(response.status, 404, `another workspace's ${path}`);
    }
    assert.equal((await stranger.client.post(`${page}/soa/approve`, {})).status, 404);
  });

  it('lists the open risks on the treatment plan page with its downloads', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const { id } = (await owner.api('GET', '/controls/A.8.24')).body;
    const created = await owner.api('POST', '/risks', {
      title: 'Laptop theft',
      likelihood: 4,
      impact: 5,
      treatment: 'mitigate',
      treatment_plan: 'Full-disk encryption.',
      residual_likelihood: 1,
      residual_impact: 5,
      due_date: '2026-12-31',
      control_ids: [id],
    });
    assert.equal(created.status, 201);
    await owner.api('POST', '/risks', { title: 'Closed one', likelihood: 1, impact: 1, status: 'closed' });
    const risks = await client.get(`${page}/risks`);
    assert.match(risks.body, new RegExp(`href="${page}/treatment-plan">Risk treatment plan`));
    const plan = await client.get(`${page}/treatment-plan`);
    assert.equal(plan.status, 200);
    assert.match(plan.body, /Laptop theft<\/a><\/th>/);
    assert.match(
      plan.body,
      /20 Critical[\s\S]*5 Medium[\s\S]*Mitigate[\s\S]*Full-disk encryption\.[\s\S]*2026-12-31[\s\S]*A\.8\.24/,
    );
    assert.doesNotMatch(plan.body, /Closed one/);
    const csv = await client.get(`${page}/treatment-plan/files/csv`);
    assert.equal(csv.status, 200);
    assert.match(
      csv.body,
      /^Risk,Score before,Score after,Treatment,Plan,Owner,Due,Controls\r\nLaptop theft,20 Critical,5 Medium,Mitigate/,
    );
  });
});
