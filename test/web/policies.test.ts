// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { testDialect } from '../helpers/database.ts';
import {
  acceptAsNewAccount,
  type SignedInOwner,
  signedInOwner,
  type WebClient,
  webClient,
} from '../helpers/web.ts';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** The policy titles a list page shows, in order. */
function titles(body: string): string[] {
  return [...body.matchAll(/<th scope="row" data-label="Policy"><a href="[^"]+">([^<]+)<\/a>/g)].map(
    (m) => m[1] ?? '',
  );
}

/** The owner invites a member from the Members page, who accepts with a new account. */
async function invitedMember(owner: SignedInOwner, email: string): Promise<WebClient> {
  await owner.client.get(`${owner.page}/members`);
  const sent = await owner.client.post(`${owner.page}/members/invitations`, { email, role: 'member' });
  assert.equal(sent.status, 303, sent.body);
  return acceptAsNewAccount(owner.fixture.runtime.app, await owner.fixture.latestInvitationPath(email));
}

const BODY = [
  '# Purpose',
  '',
  'Access is granted on **least privilege**.',
  '',
  '- Reviewed every quarter',
  '- Removed when people leave',
  '',
  '<script>alert("body")</script> [evil](javascript:alert(1)) [guide](https://example.com/guide)',
].join('\n');

describe(`the Policies pages on ${testDialect}`, () => {
  it('creates a policy, approves its draft, members acknowledge it; a new draft is versioned, and the history tells who', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const member = await invitedMember(owner, 'grace@example.com');
    const empty = await client.get(`${page}/policies`);
    assert.equal(empty.status, 200);
    assert.match(empty.body, /No policies yet/);
    assert.match(empty.body, /aria-current="page">Policies</);
    await client.get(`${page}/policies/new`);

    const created = await client.post(`${page}/policies`, {
      key: 'access-control',
      title: 'Access Control Policy',
      summary: 'Who gets access, and how it is removed.',
      body: BODY,
    });
    assert.equal(created.status, 303, created.body);
    const policyUrl = created.location?.split('?')[0] ?? '';
    const policyId = policyUrl.split('/').at(-1) ?? '';
    const draftPage = await client.get(created.location ?? '');
    assert.match(draftPage.body, /Policy created\./);
    assert.match(draftPage.body, /<h2 id="draft-title">Draft of version 1<\/h2>/);
    assert.match(draftPage.body, /<h3>Purpose<\/h3>/);
    assert.match(draftPage.body, /<strong>least privilege<\/strong>/);
    assert.match(draftPage.body, /<li>Reviewed every quarter<\/li>/);
    assert.match(
      draftPage.body,
      /<a href="https:\/\/example\.com\/guide" rel="noopener noreferrer">guide<\/a>/,
    );
    assert.doesNotMatch(draftPage.body, /<script>alert\("body"\)/);
    assert.doesNotMatch(draftPage.body, /href="javascript:/);
    assert.match(draftPage.body, /Not approved yet: members acknowledge/);
    const viaApi = (await owner.api('GET', `/policies/${policyId}`)).body;
    assert.deepEqual([viaApi.key, viaApi.status, viaApi.body], ['access-control', 'draft', BODY]);

    // A member writes drafts but does not approve them; they see why.
    const memberView = await member.get(policyUrl);
    assert.equal(memberView.status, 200);
    assert.match(memberView.body, /Only owners and admins approve a draft/);
    assert.doesNotMatch(memberView.body, /Approve this draft/);
    const memberApproves = await member.post(`${policyUrl}/approve`, {});
    assert.equal(memberApproves.status, 403);
    assert.match(memberApproves.body, /Only owners and admins approve policies/);
    assert.equal((await owner.api('GET', `/policies/${policyId}`)).body.status, 'draft');
    const notYet = await member.post(`${policyUrl}/acknowledge`, {});
    assert.equal(notYet.status, 303);
    assert.match(
      (await member.get(notYet.location ?? '')).body,
      /There is no approved version to acknowledge yet\./,
    );

    await client.get(policyUrl);
    const approved = await client.post(`${policyUrl}/approve`, {});
    assert.equal(approved.status, 303);
    const approvedPage = await client.get(approved.location ?? '');
    assert.match(approvedPage.body, /Draft approved/);
    assert.match(approvedPage.body, /<h2 id="approved-title">Version 1, approved<\/h2>/);
    assert.match(approvedPage.body, /by owner@example\.com/);
    assert.match(approvedPage.body, /No draft: the approved version is the current text/);
    assert.match(
      approvedPage.body,
      /Who has acknowledged version 1[\s\S]*0 acknowledged, 2 still to do[\s\S]*grace@<wbr>example<wbr>\.com/,
    );
    const again = await client.post(`${policyUrl}/approve`, {});
    assert.match((await client.get(again.location ?? '')).body, /There is no draft to approve/);

    await member.get(policyUrl);
    const acknowledged = await member.post(`${policyUrl}/acknowledge`, {});
    assert.equal(acknowledged.status, 303);
    const acknowledgedPage = await member.get(acknowledged.location ?? '');
    assert.match(acknowledgedPage.body, /Thank you: your acknowledgement is recorded\./);
    assert.match(acknowledgedPage.body, /You acknowledged version 1 on/);
    assert.doesNotMatch(acknowledgedPage.body, /Who has acknowledged/, 'the list is for owners and admins');
    assert.equal((await member.post(`${policyUrl}/acknowledge`, {})).status, 303, 'again changes nothing');
    const ownerSees = (await client.get(policyUrl)).body;
    assert.match(ownerSees, /1 acknowledged, 1 still to do/);
    assert.match(ownerSees, /<h3>Not yet<\/h3>[\s\S]*owner@<wbr>example<wbr>\.com/);
    const acknowledgements = (await owner.api('GET', `/policies/${policyId}/acknowledgements`)).body;
    assert.deepEqual([acknowledgements.version, acknowledgements.data.length], [1, 1]);

    // A member edits the text: a preview first (nothing saved), then the draft of version 2.
    await member.get(policyUrl);
    const preview = await member.post(policyUrl, {
      title: 'Access Control Policy',
      summary: 'Who gets access, and how it is removed.',
      body: '# Purpose\n\nAccess is granted on *need to know*.',
      intent: 'preview',
    });
    assert.equal(preview.status, 200);
    assert.match(preview.body, /Preview of your changes \(not saved\)/);
    assert.match(preview.body, /<em>need to know<\/em>/);
    assert.equal((await owner.api('GET', `/policies/${policyId}`)).body.body, BODY);
    const saved = await member.post(policyUrl, {
      title: 'Access Control Policy',
      summary: '',
      body: '# Purpose\n\nAccess is granted on *need to know*.',
      intent: 'save',
    });
    assert.equal(saved.status, 303, saved.body);
    const secondDraft = (await client.get(policyUrl)).body;
    assert.match(secondDraft, /Draft of version 2/);
    assert.match(
      secondDraft,
      /Version 1, approved[\s\S]*least privilege[\s\S]*Draft of version 2[\s\S]*need to know/,
    );
    assert.equal((await owner.api('GET', `/policies/${policyId}`)).body.summary, null);

    const versionOne = await client.get(`${policyUrl}/versions/1`);
    assert.equal(versionOne.status, 200);
    assert.match(versionOne.body, /Access Control Policy, version 1/);
    assert.match(versionOne.body, /<strong>least privilege<\/strong>/);
    assert.match(versionOne.body, /by owner@example\.com/);
    assert.match((await client.get(`${policyUrl}/versions/2`)).body, /Draft, not approved yet/);
    for (const missing of ['3', '0', 'one', '99999999999'])
      assert.equal((await client.get(`${policyUrl}/versions/${missing}`)).status, 404, missing);

    const history = (await client.get(policyUrl)).body;
    assert.match(history, /<strong>Policy created<\/strong> by owner@example\.com/);
    assert.match(history, /<strong>Policy version approved<\/strong> by owner@example\.com/);
    assert.match(history, /<strong>Policy acknowledged<\/strong> by grace@example\.com/);
    assert.match(history, /<strong>Policy changed<\/strong> by grace@example\.com/);
    const audit = (await owner.api('GET', `/audit-events?target_id=${policyId}`)).body.data;
    assert.deepEqual(
      audit.map((event: { action: string; actor: { label: string } }) => [event.action, event.actor.label]),
      [
        ['policy.updated', 'grace@example.com'],
        ['policy.acknowledged', 'grace@example.com'],
        ['policy.approved', 'owner@example.com'],
        ['policy.created', 'owner@example.com'],
      ],
    );
    const events = await owner.fixture.runtime.database.db
      .selectFrom('webhook_events')
      .select('type')
      .where('workspace_id', '=', owner.workspaceId)
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((event) => event.type).filter((type) => type.startsWith('policy.')),
      ['policy.created', 'policy.approved', 'policy.acknowledged', 'policy.updated'],
    );
  });

  it('lists policies by status, searches, pages and exports them as CSV', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    await owner.api('POST', '/policies', { key: 'access-control', title: 'Access Control' });
    await owner.api('POST', '/policies', { key: 'clean-desk', title: 'Clean Desk', status: 'archived' });
    await owner.api('POST', '/policies', { key: 'evil', title: '=HYPERLINK("https://evil.example")' });

    const list = async (query: string) => titles((await client.get(`${page}/policies${query}`)).body);
    assert.deepEqual(await list(''), [
      'Access Control',
      'Clean Desk',
      '=HYPERLINK(&quot;https://evil.example&quot;)',
    ]);
    assert.deepEqual(await list('?status=archived'), ['Clean Desk']);
    assert.deepEqual(await list('?q=DESK'), ['Clean Desk']);
    assert.deepEqual(await list('?q=access-'), ['Access Control']);
    assert.match((await client.get(`${page}/policies?q=nothing`)).body, /No policy matches these filters\./);

    const csv = await client.get(`${page}/policies.csv?q=evil`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv/);
    const lines = csv.body.trim().split('\r\n');
    assert.equal(lines[0], 'key,title,status,version,approved_at,summary,id,updated_at');
    assert.equal(lines.length, 2);
    assert.match(lines[1] ?? '', /^evil,"'=HYPERLINK\(""https:\/\/evil\.example""\)",draft,1\.0,,,pol_/);

    for (let i = 0; i < 50; i++)
      await owner.api('POST', '/policies', { key: `bulk-${i}`, title: `Bulk ${i}` });
    const first = await client.get(`${page}/policies`);
    assert.equal(titles(first.body).length, 50);
    const next = /<a href="([^"]+)" rel="next">/.exec(first.body)?.[1]?.replaceAll('&amp;', '&') ?? '';
    assert.equal(titles((await client.get(next)).body).length, 3);

    for (const bad of ['status=retired', `q=${'x'.repeat(201)}`, 'status=draft&status=approved']) {
      const refused = await client.get(`${page}/policies?${bad}`);
      assert.equal(refused.status, 400, bad);
      assert.equal(errorCodeOf(refused.body), 'invalid_filter', bad);
    }
    const forged = await client.get(`${page}/policies?cursor=bm9wZQ`);
    assert.deepEqual([forged.status, errorCodeOf(forged.body)], [400, 'invalid_cursor']);
  });

  it('answers bad input with the form again, takes a long text, and answers another workspace’s policies with 404', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page, fixture } = owner;
    await client.get(`${page}/policies/new`);
    const bad = await client.post(`${page}/policies`, { key: 'Access Control', title: ' ', body: '' });
    assert.equal(bad.status, 400);
    assert.match(bad.body, /Give the policy a key of lowercase letters/);
    assert.match(bad.body, /Give the policy a title/);
    assert.match(bad.body, /value="Access Control"/, 'the form comes back as sent');
    const tooLong = await client.post(`${page}/policies`, {
      key: 'x',
      title: 'x',
      body: 'x'.repeat(200_001),
    });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body, /Keep the text under 200,000 characters/);
    assert.equal((await owner.api('GET', '/policies')).body.data.length, 0, 'nothing was created');

    const policy = (await owner.api('POST', '/policies', { key: 'access-control', title: 'Access' })).body;
    await client.get(`${page}/policies/new`);
    const taken = await client.post(`${page}/policies`, { key: 'access-control', title: 'Another' });
    assert.equal(taken.status, 400);
    assert.match(taken.body, /The policy “Access” already has this key\./);
    assert.equal((await owner.api('GET', `/policies/${policy.id}`)).body.title, 'Access');

    // A long policy (the longest allowed, in a script of three-byte characters) fits the form.
    await client.get(`${page}/policies/${policy.id}`);
    const longText = '政策'.repeat(100_000);
    const long = await client.post(`${page}/policies/${policy.id}`, {
      title: 'Access',
      summary: '',
      body: longText,
    });
    assert.equal(long.status, 303, long.body.slice(0, 200));
    assert.equal((await owner.api('GET', `/policies/${policy.id}`)).body.body, longText);
    const noTitle = await client.post(`${page}/policies/${policy.id}`, { title: '', body: 'x' });
    assert.equal(noTitle.status, 400);
    assert.match(noTitle.body, /Give the policy a title/);
    assert.equal((await client.get(`${page}/policies/pol_nobody`)).status, 404);

    const other = await fixture.provision({ email: 'other@example.com' });
    const stranger = await acceptAsNewAccount(fixture.runtime.app, other.invitationPath);
    assert.equal((await stranger.get(`${page}/policies/${policy.id}`)).status, 404);
    assert.equal((await stranger.get(`/w/${other.workspaceId}/policies/${policy.id}`)).status, 404);
    assert.equal(
      (await stranger.get(`/w/${other.workspaceId}/policies/${policy.id}/versions/1`)).status,
      404,
    );
    await stranger.get(`/w/${other.workspaceId}/policies`);
    for (const action of ['approve', 'acknowledge'])
      assert.equal(
        (await stranger.post(`/w/${other.workspaceId}/policies/${policy.id}/${action}`, {})).status,
        404,
      );
    assert.equal((await owner.api('GET', `/policies/${policy.id}`)).body.status, 'draft');
    const signedOut = await webClient(fixture.runtime.app).get(`${page}/policies`);
    assert.equal(signedOut.status, 303);
    assert.match(signedOut.location ?? '', /^\/sign-in\?next=/);
  });
});
