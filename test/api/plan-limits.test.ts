// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { PLAN_ENTITLEMENTS } from '../../src/catalog/index.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { type AppFixture, acceptAsNewAccount, startAppFixture, type WebClient } from '../helpers/web.ts';

const FREE = PLAN_ENTITLEMENTS.free;
const HOOK_URL = 'http://127.0.0.1:9/hook';
const OWNER = 'owner@example.com';
const PASSWORD = 'correct horse battery staple';

interface Workspace {
  fixture: AppFixture;
  workspaceId: string;
  owner: WebClient;
  key: string;
  keyId: string;
  /** Where the REST API listens on loopback. */
  apiUrl: string;
}

/** A Pro workspace (one year) with a signed-in owner and one API key, the service on loopback. */
async function proWorkspace(t: TestContext): Promise<Workspace> {
  const fixture = await startAppFixture(t, { env: { WEBHOOK_ALLOW_LOOPBACK: 'true' } });
  const apiUrl = await fixture.runtime.app.listen({ host: '127.0.0.1', port: 0 });
  const { workspaceId, invitationPath } = await fixture.provision({
    email: 'owner@example.com',
    name: 'Acme',
  });
  const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  const created = await createApiKey(
    fixture.runtime.database.db,
    fixture.runtime.clock,
    { workspaceId, name: 'agent' },
    OPERATOR_SOURCE,
  );
  assert.ok(created.ok);
  return { fixture, workspaceId, owner, key: created.value.key, keyId: created.value.info.id, apiUrl };
}

/**
 * The term ends and the term-end sweep moves the workspace to Free, as in production; the owner
 * signs in again (the session of a year ago has ended).
 */
async function moveToFree(workspace: Workspace): Promise<void> {
  const { runtime } = workspace.fixture;
  runtime.clock.advance(400 * DAY_MS);
  const ended = await endElapsedTerms(runtime.database.db, {
    clock: runtime.clock,
    baseUrl: runtime.config.baseUrl,
  });
  assert.deepEqual(
    ended.map((term) => term.planNow),
    ['free'],
  );
  await workspace.owner.get('/sign-in');
  const signedIn = await workspace.owner.post('/sign-in', { email: OWNER, password: PASSWORD });
  assert.equal(signedIn.status, 303);
}

async function freeWorkspace(t: TestContext): Promise<Workspace> {
  const workspace = await proWorkspace(t);
  await moveToFree(workspace);
  return workspace;
}

async function rest(
  workspace: Workspace,
  method: string,
  path: string,
  body?: unknown | FormData,
  // biome-ignore lint/suspicious/noExplicitAny: tests read JSON bodies of every shape
): Promise<any> {
  const headers: Record<string, string> = { authorization: `Bearer ${workspace.key}` };
  let payload: string | FormData | undefined;
  if (body instanceof FormData) payload = body;
  else if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const response = await fetch(`${workspace.apiUrl}/api/v1${path}`, {
    method,
    headers,
    body: payload,
  });
  const text = await response.text();
  return {
    status: response.status,
    type: response.headers.get('content-type') ?? '',
    headers: response.headers,
    body: text.startsWith('{') ? JSON.parse(text) : text,
  };
}

function upload(bytes: number, name = 'note.txt'): FormData {
  const data = new FormData();
  data.append('file', new Blob([Buffer.alloc(bytes, 'a')], { type: 'text/plain' }), name);
  return data;
}

function assertPlanLimitProblem(
  // biome-ignore lint/suspicious/noExplicitAny: a problem+json body
  answer: { status: number; type: string; body: any },
  workspace: Workspace,
  expected: { resource: string; limit: number },
): void {
  assert.equal(answer.status, 403);
  assert.match(answer.type, /^application\/problem\+json/);
  const billing = `${workspace.fixture.baseUrl}/w/${workspace.workspaceId}/billing`;
  assert.deepEqual(
    {
      code: answer.body.code,
      resource: answer.body.resource,
      limit: answer.body.limit,
      plan: answer.body.plan,
      upgrade_url: answer.body.upgrade_url,
    },
    { code: 'plan_limit_reached', ...expected, plan: 'free', upgrade_url: billing },
  );
  assert.ok(answer.body.detail.includes(billing), 'the detail names where to upgrade');
}

function assertAppRefusal(page: { status: number; body: string }, workspace: Workspace): void {
  assert.equal(page.status, 403);
  assert.match(page.body, /<meta name="error-code" content="plan_limit_reached">/);
  assert.match(page.body, /class="error-summary"/);
  assert.ok(
    page.body.includes(`/w/${workspace.workspaceId}/billing`),
    'the form error names where to upgrade',
  );
}

describe(`plan limits on ${testDialect}`, () => {
  it('refuse the webhook subscription over the plan on the REST API and in the app; the last one that fits is accepted', async (t) => {
    const workspace = await freeWorkspace(t);
    for (let n = 0; n < FREE.webhookSubscriptions; n++) {
      const fits = await rest(workspace, 'POST', '/hooks', { url: `${HOOK_URL}/${n}`, event_types: ['*'] });
      assert.equal(fits.status, 201, JSON.stringify(fits.body));
    }
    const over = await rest(workspace, 'POST', '/hooks', { url: HOOK_URL, event_types: ['*'] });
    assertPlanLimitProblem(over, workspace, {
      resource: 'webhook_subscriptions',
      limit: FREE.webhookSubscriptions,
    });

    const page = `/w/${workspace.workspaceId}/integrations/webhooks`;
    await workspace.owner.get(page);
    const refused = await workspace.owner.post(page, { url: HOOK_URL, event_types: ['*'] });
    assertAppRefusal(refused, workspace);
    const listed = await rest(workspace, 'GET', '/hooks');
    assert.equal(listed.body.data.length, FREE.webhookSubscriptions);
  });

  it('refuse the API key over the plan in the app; with one revoked, the next fits', async (t) => {
    const workspace = await freeWorkspace(t);
    assert.equal(FREE.apiKeys, 1, 'the workspace already holds the one key Free allows');
    const page = `/w/${workspace.workspaceId}/integrations`;
    await workspace.owner.get(page);
    const refused = await workspace.owner.post(`${page}/keys`, { name: 'second', expires_in: 'never' });
    assertAppRefusal(refused, workspace);

    await workspace.owner.post(`${page}/keys/${workspace.keyId}/revoke`, {});
    await workspace.owner.get(page);
    const fits = await workspace.owner.post(`${page}/keys`, { name: 'second', expires_in: 'never' });
    assert.equal(fits.status, 201);
  });

  it('refuse the invitation over the plan: members and pending invitations count', async (t) => {
    const workspace = await freeWorkspace(t);
    const page = `/w/${workspace.workspaceId}/members`;
    await workspace.owner.get(page);
    for (let n = 1; n < FREE.members; n++) {
      const fits = await workspace.owner.post(`${page}/invitations`, {
        email: `m${n}@example.com`,
        role: 'member',
      });
      assert.equal(fits.status, 303, `invitation ${n} fits`);
    }
    const again = await workspace.owner.post(`${page}/invitations`, {
      email: 'm1@example.com',
      role: 'member',
    });
    assert.equal(again.status, 303, 'a new invitation to an invited address replaces it: no seat more');
    await workspace.owner.get(page);
    const refused = await workspace.owner.post(`${page}/invitations`, {
      email: 'over@example.com',
      role: 'member',
    });
    assertAppRefusal(refused, workspace);
  });

  it('refuse the evidence file that would go over the stored bytes; one that ends exactly at the limit fits', async (t) => {
    const workspace = await freeWorkspace(t);
    const { db } = workspace.fixture.runtime.database;
    const now = workspace.fixture.runtime.clock.now().getTime();
    await db
      .insertInto('evidence')
      .values({
        id: 'evd_stored_before',
        workspace_id: workspace.workspaceId,
        kind: 'file',
        title: 'Stored before',
        url: null,
        file_name: 'big.pdf',
        file_size: FREE.evidenceStorageBytes - 10,
        file_sha256: '0'.repeat(64),
        content_type: 'application/pdf',
        storage_key: 'stored-before',
        created_at: now,
        updated_at: now,
      })
      .execute();
    const fits = await rest(workspace, 'POST', '/evidence', upload(10));
    assert.equal(fits.status, 201, JSON.stringify(fits.body));
    const over = await rest(workspace, 'POST', '/evidence', upload(1));
    assertPlanLimitProblem(over, workspace, {
      resource: 'evidence_storage_bytes',
      limit: FREE.evidenceStorageBytes,
    });
    const links = await rest(workspace, 'POST', '/evidence', {
      title: 'A link stores no bytes',
      url: 'https://example.com',
    });
    assert.equal(links.status, 201);
  });

  it("limit each key to its plan's rate: Free's requests per minute, then 429", async (t) => {
    const workspace = await freeWorkspace(t);
    for (let n = 0; n < FREE.apiRequestsPerMinute; n++) {
      const answer = await rest(workspace, 'GET', '/me');
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('ratelimit-limit'), String(FREE.apiRequestsPerMinute));
    }
    assert.equal((await rest(workspace, 'GET', '/me')).status, 429);
  });

  it('keep everything readable after the move to Free, even over its limits', async (t) => {
    const workspace = await proWorkspace(t);
    for (let n = 0; n < 3; n++) {
      const made = await rest(workspace, 'POST', '/hooks', { url: `${HOOK_URL}/${n}`, event_types: ['*'] });
      assert.equal(made.status, 201);
    }
    const evidence = await rest(workspace, 'POST', '/evidence', upload(100, 'policy.txt'));
    assert.equal(evidence.status, 201);
    const second = await createApiKey(
      workspace.fixture.runtime.database.db,
      workspace.fixture.runtime.clock,
      { workspaceId: workspace.workspaceId, name: 'second' },
      OPERATOR_SOURCE,
    );
    assert.ok(second.ok);

    await moveToFree(workspace);

    const hooks = await rest(workspace, 'GET', '/hooks');
    assert.equal(hooks.body.data.length, 3, 'three subscriptions, over Free’s one, all still listed');
    for (const hook of hooks.body.data) {
      assert.equal((await rest(workspace, 'GET', `/hooks/${hook.id}`)).status, 200);
    }
    const file = await fetch(`${workspace.apiUrl}/api/v1/evidence/${evidence.body.id}/file`, {
      headers: { authorization: `Bearer ${workspace.key}` },
    });
    assert.equal(file.status, 200);
    assert.equal((await file.arrayBuffer()).byteLength, 100);
    const keysPage = await workspace.owner.get(`/w/${workspace.workspaceId}/integrations`);
    assert.equal(keysPage.status, 200);
    assert.match(keysPage.body, /second/, 'the key over Free’s limit is still shown');
    const webhooksPage = await workspace.owner.get(`/w/${workspace.workspaceId}/integrations/webhooks`);
    assert.equal(webhooksPage.status, 200);
    assert.equal(webhooksPage.body.match(/127\.0\.0\.1:9\/hook\//g)?.length ?? 0, 3);
  });
});
