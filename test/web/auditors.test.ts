// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditAction } from '../../src/audit/index.ts';
import { fillPattern, routesOf } from '../fuzz/routes.ts';
import { testDialect } from '../helpers/database.ts';
import {
  acceptAsNewAccount,
  type SignedInOwner,
  signedInOwner,
  type WebClient,
  webClient,
} from '../helpers/web.ts';

const AUDITOR = 'auditor@audit-firm.example';

function errorCodeOf(body: string): string | undefined {
  return /<meta name="error-code" content="([a-z_]+)">/.exec(body)?.[1];
}

/** The pages an external auditor reads, relative to the workspace; every other route refuses them. */
const AUDITOR_PAGES = [
  'GET /controls',
  'GET /controls.csv',
  'GET /controls/:controlId',
  'GET /evidence',
  'GET /evidence.csv',
  'GET /evidence/:evidenceId',
  'GET /evidence/:evidenceId/file',
  'GET /risks',
  'GET /risks.csv',
  'GET /risks/:riskId',
  'GET /policies',
  'GET /policies.csv',
  'GET /policies/:policyId',
  'GET /policies/:policyId/versions/:number',
  'GET /soa',
  'GET /soa/files/:format',
  'GET /soa/versions/:number/files/:format',
  'GET /treatment-plan',
  'GET /treatment-plan/files/:format',
  'GET /evidence-packages',
  'POST /evidence-packages',
  'GET /evidence-packages/:packageId',
  'GET /evidence-packages/:packageId/download',
];

/** A workspace with a record of each kind the auditor reads: a risk, a policy approved once then redrafted, a file. */
async function workspaceWithRecords(owner: SignedInOwner) {
  const risk = await owner.api('POST', '/risks', { title: 'Laptop theft', likelihood: 3, impact: 4 });
  assert.equal(risk.status, 201);
  assert.equal((await owner.api('POST', '/soa/approve')).status, 201);
  const evidencePackage = await owner.api('POST', '/evidence-packages', {});
  assert.equal(evidencePackage.status, 202, JSON.stringify(evidencePackage.body));
  const policy = await owner.api('POST', '/policies', {
    key: 'access-control',
    title: 'Access control',
    body: 'Approved text of version one.',
  });
  assert.equal(policy.status, 201, JSON.stringify(policy.body));
  assert.equal((await owner.api('POST', `/policies/${policy.body.id}/approve`)).status, 200);
  const redraft = await owner.api('PATCH', `/policies/${policy.body.id}`, {
    body: 'SECRET DRAFT of version two.',
  });
  assert.equal(redraft.status, 200);
  const evidenceId = await uploadFile(
    owner,
    'access-review.txt',
    'Quarterly access review: all accounts checked.',
  );
  return {
    riskId: risk.body.id as string,
    policyId: policy.body.id as string,
    evidenceId,
    packageId: evidencePackage.body.id as string,
  };
}

async function uploadFile(owner: SignedInOwner, fileName: string, content: string): Promise<string> {
  await owner.client.get(`${owner.page}/evidence/new`);
  const form = new FormData();
  form.append('_csrf', owner.client.csrfToken());
  form.append('file', new Blob([content]), fileName);
  const encoded = new Response(form);
  const response = await owner.fixture.runtime.app.inject({
    method: 'POST',
    url: `${owner.page}/evidence/files`,
    headers: {
      accept: 'text/html',
      'content-type': encoded.headers.get('content-type') ?? '',
      origin: new URL(owner.fixture.baseUrl).origin,
      cookie: [...owner.client.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
    },
    payload: Buffer.from(await encoded.arrayBuffer()),
  });
  assert.equal(response.statusCode, 303, response.body);
  const id = /\/evidence\/(evd_[^?/]+)/.exec(String(response.headers.location))?.[1];
  assert.ok(id, String(response.headers.location));
  return id;
}

/** The owner invites the auditor from the Auditors page; the auditor accepts with a new account. */
async function inviteAuditor(owner: SignedInOwner, accessUntil: string): Promise<WebClient> {
  await owner.client.get(`${owner.page}/auditors`);
  const sent = await owner.client.post(`${owner.page}/auditors/invitations`, {
    email: AUDITOR,
    access_until: accessUntil,
  });
  assert.equal(sent.status, 303, sent.body);
  assert.equal(sent.location, `${owner.page}/auditors?notice=invited`);
  const path = await owner.fixture.latestInvitationPath(AUDITOR);
  return acceptAsNewAccount(owner.fixture.runtime.app, path);
}

/** A fresh browser session of the account (sessions end after 12 hours; tests move the clock further). */
async function signIn(owner: SignedInOwner, email: string): Promise<WebClient> {
  const client = webClient(owner.fixture.runtime.app, new URL(owner.fixture.baseUrl).origin);
  await client.get('/sign-in');
  const signedIn = await client.post('/sign-in', { email, password: 'correct horse battery staple' });
  assert.equal(signedIn.status, 303, signedIn.body);
  return client;
}

async function auditEvents(owner: SignedInOwner, action: AuditAction) {
  return owner.fixture.runtime.database.db
    .selectFrom('audit_events')
    .select(['actor_label', 'target_type', 'target_id', 'target_label'])
    .where('workspace_id', '=', owner.workspaceId)
    .where('action', '=', action)
    .orderBy('id')
    .execute();
}

describe(`auditor access on ${testDialect}`, () => {
  it('an owner invites an auditor by email until a date; the auditor lands on the controls and reads only the read-only set', async (t) => {
    const owner = await signedInOwner(t);
    const records = await workspaceWithRecords(owner);
    const auditor = await inviteAuditor(owner, '2026-03-31');

    const mail = owner.fixture.sent.filter((message) => message.to === AUDITOR).at(-1);
    assert.equal(mail?.subject, 'You are invited to audit a compliance workspace');
    assert.match(mail?.text ?? '', /until March 31, 2026 at 11:59 PM \(UTC\); you cannot change anything/);

    // The Members page lists the team only; the Auditors page lists the auditor with the date.
    const members = await owner.client.get(`${owner.page}/members`);
    assert.doesNotMatch(members.body, /audit-firm/);
    const auditors = await owner.client.get(`${owner.page}/auditors`);
    assert.match(auditors.body, /auditor@<wbr>audit-firm<wbr>\.example/);
    assert.match(auditors.body, /Until <time datetime="2026-03-31T23:59:59.999Z">/);

    // After sign-in the workspace opens at its controls; its overview leads there too.
    const home = await auditor.get('/w');
    assert.equal(home.location, `${owner.page}/controls`);
    assert.equal((await auditor.get(owner.page)).location, `${owner.page}/controls`);
    const list = await auditor.get('/workspaces');
    assert.match(list.body, new RegExp(`href="${owner.page}/controls"`));
    assert.match(list.body, /you are its auditor, read-only, until/);

    // The nav offers only what the auditor may open, and no page of the set carries a form of the workspace.
    const controls = await auditor.get(`${owner.page}/controls`);
    assert.equal(controls.status, 200);
    assert.match(controls.body, /Read-only auditor access until 31 Mar 2026, 23:59 UTC\./);
    const nav = /<nav class="tabs" aria-label="Workspace">([\s\S]*?)<\/nav>/.exec(controls.body)?.[1] ?? '';
    assert.deepEqual(
      [...nav.matchAll(/>([A-Za-z ]+)<\/a>/g)].map((m) => m[1]),
      ['Controls', 'Statement of Applicability', 'Evidence', 'Risks', 'Policies'],
    );

    const values: Record<string, string> = {
      ':workspaceId': owner.workspaceId,
      ':controlId': 'A.5.15',
      ':evidenceId': records.evidenceId,
      ':riskId': records.riskId,
      ':policyId': records.policyId,
      ':number': '1',
      ':format': 'csv',
      ':packageId': records.packageId,
    };
    const routes = routesOf(owner.fixture.runtime.app).filter(
      (route) => route.url.startsWith('/w/:workspaceId') && route.method !== 'HEAD',
    );
    assert.ok(routes.length > 40, `only ${routes.length} workspace routes found`);
    const allowed: string[] = [];
    for (const route of routes) {
      const url = fillPattern(route.url, (prefix) => {
        const name = /:\w+$/.exec(prefix)?.[0] ?? '';
        return values[name] ?? 'x_unknown1';
      });
      const key = `${route.method} ${route.url.slice('/w/:workspaceId'.length)}`;
      await auditor.get(`${owner.page}/controls`);
      // Pages and forms use GET and POST only; another method would need its own request here.
      assert.ok(route.method === 'GET' || route.method === 'POST', key);
      const response = route.method === 'GET' ? await auditor.get(url) : await auditor.post(url, {});
      if (key === 'GET ') {
        assert.equal(response.status, 303, key);
        continue;
      }
      // Requesting a package answers with its progress page; its download waits until it is built.
      if (response.status === 303 || (response.status === 409 && key.endsWith('/download'))) {
        allowed.push(key);
        continue;
      }
      if (response.status === 200) {
        allowed.push(key);
        const forms = [...response.body.matchAll(/<form method="post" action="\/w\/[^"]*"/g)].map(
          (m) => m[0],
        );
        assert.ok(
          forms.every((form) => form.endsWith('/evidence-packages"')),
          `${key} shows a form: ${forms.join(', ')}`,
        );
        assert.doesNotMatch(response.body, /SECRET DRAFT/, `${key} shows the policy's draft`);
        continue;
      }
      assert.equal(response.status, 403, `${key} answered ${response.status} to an auditor`);
      assert.equal(errorCodeOf(response.body), 'auditor_not_allowed', key);
    }
    // A page marked for auditors elsewhere (the SoA, the package) belongs in AUDITOR_PAGES too.
    assert.deepEqual(allowed.sort(), [...AUDITOR_PAGES].sort());

    // The policy's approved version reads; the draft being written does not exist for the auditor.
    const policy = await auditor.get(`${owner.page}/policies/${records.policyId}`);
    assert.match(policy.body, /Approved text of version one\./);
    assert.equal((await auditor.get(`${owner.page}/policies/${records.policyId}/versions/2`)).status, 404);
    assert.equal(
      (await owner.client.get(`${owner.page}/policies/${records.policyId}/versions/2`)).status,
      200,
    );

    // Another workspace is not theirs to know; the REST API takes API keys only, which they cannot make.
    const other = await owner.fixture.provision({ email: 'other@example.com' });
    assert.equal((await auditor.get(`/w/${other.workspaceId}/controls`)).status, 404);
    assert.equal((await auditor.get('/api/v1/controls')).status, 401);

    // The writes were refused before anything changed.
    const risk = await owner.api('GET', `/risks/${records.riskId}`);
    assert.equal(risk.body.title, 'Laptop theft');
    const evidence = await owner.api('GET', `/evidence/${records.evidenceId}`);
    assert.equal(evidence.status, 200);
    assert.equal(evidence.body.retired_at, null);
  });

  it('records every page the auditor opens and every file they download in the audit log', async (t) => {
    const owner = await signedInOwner(t);
    const { evidenceId } = await workspaceWithRecords(owner);
    const auditor = await inviteAuditor(owner, '2026-03-31');

    assert.equal((await auditor.get(`${owner.page}/controls?status=not_started`)).status, 200);
    assert.equal((await auditor.get(`${owner.page}/evidence/${evidenceId}`)).status, 200);
    const file = await auditor.get(`${owner.page}/evidence/${evidenceId}/file`);
    assert.equal(file.status, 200);
    assert.equal(file.body, 'Quarterly access review: all accounts checked.');
    assert.equal((await auditor.get(`${owner.page}/risks.csv`)).status, 200);
    // Refused pages are not visits.
    assert.equal((await auditor.get(`${owner.page}/members`)).status, 403);

    const views = await auditEvents(owner, 'auditor.page_viewed');
    assert.deepEqual(
      views.map((event) => [event.actor_label, event.target_type, event.target_id, event.target_label]),
      [
        [AUDITOR, 'page', '/controls', `${owner.page}/controls`],
        [AUDITOR, 'page', '/evidence/:evidenceId', `${owner.page}/evidence/${evidenceId}`],
      ],
    );
    const downloads = await auditEvents(owner, 'auditor.file_downloaded');
    assert.deepEqual(
      downloads.map((event) => [event.actor_label, event.target_type, event.target_id, event.target_label]),
      [
        [
          AUDITOR,
          'file',
          '/evidence/:evidenceId/file',
          `access-review.txt (${owner.page}/evidence/${evidenceId}/file)`,
        ],
        [AUDITOR, 'file', '/risks.csv', `risks-${owner.workspaceId}.csv (${owner.page}/risks.csv)`],
      ],
    );
    // The owners read them on the audit log page; the owner's own visits are not recorded.
    const log = await owner.client.get(`${owner.page}/audit`);
    assert.match(log.body, /Auditor downloaded a file/);
    assert.match(log.body, /Auditor opened a page/);
    assert.match(log.body, /Auditor invited/);
    assert.equal((await auditEvents(owner, 'auditor.page_viewed')).length, 2);
  });

  it('ends the access by itself at the end of the date (moved clock), and the workspace leaves the auditor’s list', async (t) => {
    const owner = await signedInOwner(t);
    await inviteAuditor(owner, '2026-03-31');
    const clock = owner.fixture.runtime.clock;

    clock.set('2026-03-31T23:59:00.000Z');
    const auditor = await signIn(owner, AUDITOR);
    assert.equal((await auditor.get(`${owner.page}/controls`)).status, 200);

    clock.set('2026-04-01T00:00:00.000Z');
    const ended = await auditor.get(`${owner.page}/controls`);
    assert.equal(ended.status, 403);
    assert.equal(errorCodeOf(ended.body), 'auditor_access_ended');
    assert.match(ended.body, /Your auditor access to this workspace has ended/);
    assert.equal((await auditor.get('/w')).location, '/workspaces');
    assert.doesNotMatch((await auditor.get('/workspaces')).body, new RegExp(owner.workspaceId));
    const ownerNow = await signIn(owner, 'owner@example.com');
    assert.match((await ownerNow.get(`${owner.page}/auditors`)).body, /Ended <time/);

    // Invited again with a later date, the same account reads again, with one membership.
    const again = await ownerNow.post(`${owner.page}/auditors/invitations`, {
      email: AUDITOR,
      access_until: '2026-04-30',
    });
    assert.equal(again.status, 303, again.body);
    const path = await owner.fixture.latestInvitationPath(AUDITOR);
    await auditor.get(path);
    assert.equal((await auditor.post(`${path}/accept`, {})).status, 303);
    assert.equal((await auditor.get(`${owner.page}/controls`)).status, 200);
    const rows = await owner.fixture.runtime.database.db
      .selectFrom('workspace_members')
      .select(['role', 'access_until'])
      .where('workspace_id', '=', owner.workspaceId)
      .where('email', '=', AUDITOR)
      .execute();
    assert.deepEqual(
      rows.map((row) => [row.role, Number(row.access_until)]),
      [['auditor', Date.parse('2026-04-30T23:59:59.999Z')]],
    );
  });

  it('ends the access at once when an owner revokes it', async (t) => {
    const owner = await signedInOwner(t);
    const auditor = await inviteAuditor(owner, '2026-03-31');
    assert.equal((await auditor.get(`${owner.page}/controls`)).status, 200);

    const page = await owner.client.get(`${owner.page}/auditors`);
    const revoke = /action="([^"]+\/revoke)"/.exec(page.body)?.[1] ?? '';
    const revoked = await owner.client.post(revoke, {});
    assert.equal(revoked.status, 303);
    assert.equal(revoked.location, `${owner.page}/auditors?notice=revoked`);

    const gone = await auditor.get(`${owner.page}/controls`);
    assert.equal(gone.status, 404);
    const events = await auditEvents(owner, 'auditor.access_revoked');
    assert.deepEqual(
      events.map((event) => [event.target_type, event.target_label]),
      [['auditor', `${AUDITOR} (auditor)`]],
    );
    // The old invitation link cannot bring them back.
    assert.equal((await owner.client.post(revoke, {})).status, 404);
  });

  it('refuses bad invitations with a clear error; only owners invite; an invitation can be revoked', async (t) => {
    const owner = await signedInOwner(t);
    await owner.client.get(`${owner.page}/auditors`);
    const cases: [Record<string, string>, number, string][] = [
      [{ email: AUDITOR, access_until: '2026-02-30' }, 400, 'invalid_date'],
      [{ email: AUDITOR, access_until: '2026-02-28' }, 400, 'invalid_date'],
      [{ email: AUDITOR, access_until: '2027-03-03' }, 400, 'invalid_date'],
      [{ email: AUDITOR, access_until: `2026-03-31${'9'.repeat(5000)}` }, 400, 'invalid_date'],
      [{ email: 'not an address', access_until: '2026-03-31' }, 400, 'invalid_email'],
      [{ email: 'owner@example.com', access_until: '2026-03-31' }, 409, 'already_member'],
    ];
    for (const [form, status, code] of cases) {
      const answer = await owner.client.post(`${owner.page}/auditors/invitations`, form);
      assert.equal(
        answer.status,
        status,
        `${JSON.stringify(form).slice(0, 80)}: ${answer.body.slice(0, 200)}`,
      );
      assert.equal(errorCodeOf(answer.body), code);
    }
    assert.equal(owner.fixture.sent.filter((mail) => mail.subject.includes('audit')).length, 0);

    const sent = await owner.client.post(`${owner.page}/auditors/invitations`, {
      email: AUDITOR,
      access_until: '2026-03-31',
    });
    assert.equal(sent.status, 303);
    const path = await owner.fixture.latestInvitationPath(AUDITOR);
    const page = await owner.client.get(`${owner.page}/auditors`);
    const revoke = /action="([^"]+\/invitations\/[^"]+\/revoke)"/.exec(page.body)?.[1] ?? '';
    assert.equal((await owner.client.post(revoke, {})).status, 303);
    const link = await owner.fixture.runtime.app.inject({ method: 'GET', url: path });
    assert.doesNotMatch(link.body, /Accept this invitation/);

    // Auditors take no seat, so their number has a bound of its own.
    for (let n = 1; n <= 25; n++) {
      const invited = await owner.client.post(`${owner.page}/auditors/invitations`, {
        email: `auditor${n}@audit-firm.example`,
        access_until: '2026-03-31',
      });
      assert.equal(invited.status, 303, invited.body);
    }
    const oneTooMany = await owner.client.post(`${owner.page}/auditors/invitations`, {
      email: 'auditor26@audit-firm.example',
      access_until: '2026-03-31',
    });
    assert.equal(oneTooMany.status, 409);
    assert.equal(errorCodeOf(oneTooMany.body), 'too_many_auditors');

    // Another workspace's auditor or invitation is not found here.
    assert.equal((await owner.client.post(`${owner.page}/auditors/mbr_elsewhere/revoke`, {})).status, 404);

    // A member of the team neither opens the page nor invites.
    const member = await owner.client.post(`${owner.page}/members/invitations`, {
      email: 'member@example.com',
      role: 'member',
    });
    assert.equal(member.status, 303);
    const memberClient = await acceptAsNewAccount(
      owner.fixture.runtime.app,
      await owner.fixture.latestInvitationPath('member@example.com'),
    );
    assert.equal((await memberClient.get(`${owner.page}/auditors`)).status, 403);
    await memberClient.get(`${owner.page}/controls`);
    const refused = await memberClient.post(`${owner.page}/auditors/invitations`, {
      email: 'other@audit-firm.example',
      access_until: '2026-03-31',
    });
    assert.equal(refused.status, 403);
  });
});
