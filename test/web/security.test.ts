// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUser, hashPassword } from '../../src/accounts/index.ts';
import { newId } from '../../src/shared/ids.ts';
import { testDialect } from '../helpers/database.ts';
import { acceptAsNewAccount, startAppFixture, type WebClient, webClient } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const SCRIPT = '<script>alert("owned")</script>';

async function keyCount(fixture: Awaited<ReturnType<typeof startAppFixture>>): Promise<number> {
  const row = await fixture.runtime.database.db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function ownerOfNewWorkspace(fixture: Awaited<ReturnType<typeof startAppFixture>>, name?: string) {
  const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com', name });
  const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  return { workspaceId, client };
}

describe(`web app security on ${testDialect}`, () => {
  it('refuses form posts from another origin, without the token, or with a token of another session', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, client } = await ownerOfNewWorkspace(fixture);
    await client.get(`/w/${workspaceId}/integrations`);
    const url = `/w/${workspaceId}/integrations/keys`;

    const foreignOrigin = await client.post(url, { name: 'x' }, { origin: 'https://evil.example' });
    assert.equal(foreignOrigin.status, 403);
    assert.match(foreignOrigin.body, /This form could not be accepted/);
    const nullOrigin = await client.post(
      url,
      { name: 'x' },
      { origin: 'null', 'sec-fetch-site': 'cross-site' },
    );
    assert.equal(nullOrigin.status, 403);
    const sameSiteOtherOrigin = await client.post(
      url,
      { name: 'x' },
      { origin: '', 'sec-fetch-site': 'same-site' },
    );
    assert.equal(sameSiteOtherOrigin.status, 403);
    const noToken = await client.post(url, { name: 'x', _csrf: '' });
    assert.equal(noToken.status, 403);

    const stranger = webClient(fixture.runtime.app);
    await stranger.get('/sign-in');
    const foreignToken = await client.post(url, { name: 'x', _csrf: stranger.csrfToken() });
    assert.equal(foreignToken.status, 403);

    const json = await fixture.runtime.app.inject({
      method: 'POST',
      url,
      headers: {
        'content-type': 'application/json',
        cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
      payload: JSON.stringify({ name: 'x', _csrf: client.csrfToken() }),
    });
    assert.equal(json.statusCode, 415, 'pages take form posts only');
    assert.match(json.headers['content-type'] ?? '', /text\/html/);

    assert.equal(await keyCount(fixture), 0);
    await client.get(`/w/${workspaceId}/integrations`);
    assert.equal((await client.post(url, { name: 'legit', expires_in: 'never' })).status, 201);
    assert.equal(await keyCount(fixture), 1);
  });

  it('gives a new session id at sign-in: a session planted or held before is worthless after it', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId } = await ownerOfNewWorkspace(fixture);
    const victim = webClient(fixture.runtime.app);
    const planted = `ses_${'A'.repeat(43)}`;
    victim.cookies.set('__Host-svc_session', planted);
    await victim.get('/sign-in');
    assert.equal(
      (await victim.post('/sign-in', { email: 'owner@example.com', password: PASSWORD })).status,
      303,
    );
    const first = victim.cookies.get('__Host-svc_session');
    assert.ok(first && first !== planted);

    await victim.get('/legal/terms');
    await victim.post('/sign-out', {});
    await victim.get('/sign-in');
    await victim.post('/sign-in', { email: 'owner@example.com', password: PASSWORD });
    const second = victim.cookies.get('__Host-svc_session');
    assert.ok(second && second !== first);

    for (const old of [planted, first]) {
      const attacker = webClient(fixture.runtime.app);
      attacker.cookies.set('__Host-svc_session', old);
      assert.equal((await attacker.get(`/w/${workspaceId}`)).status, 303);
    }
    assert.equal((await victim.get(`/w/${workspaceId}`)).status, 200);
  });

  it('renders stored script in workspace and key names as text', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, client } = await ownerOfNewWorkspace(fixture, `Acme ${SCRIPT}`);
    await client.get(`/w/${workspaceId}/integrations`);
    const created = await client.post(`/w/${workspaceId}/integrations/keys`, {
      name: `Key ${SCRIPT}`,
      expires_in: '30',
    });
    assert.equal(created.status, 201);
    for (const page of [created, await client.get(`/w/${workspaceId}`), await client.get('/workspaces')]) {
      assert.ok(!page.body.includes(SCRIPT), 'no raw markup from a name');
      assert.match(page.body, /&lt;script&gt;alert\(&quot;owned&quot;\)&lt;\/script&gt;/);
      assert.doesNotMatch(page.body, /<script>/, 'the only scripts are external files');
    }
  });

  it('refuses a key name with text-direction controls, with which one name shows as another', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, client } = await ownerOfNewWorkspace(fixture);
    await client.get(`/w/${workspaceId}/integrations`);
    for (const control of ['\u202e', '\u202d', '\u2066', '\u2067', '\u2068', '\u202b']) {
      const refused = await client.post(`/w/${workspaceId}/integrations/keys`, {
        name: `Deploy ${control}evil`,
      });
      assert.equal(refused.status, 400);
      assert.match(refused.body, /Leave out text-direction control characters/);
    }
    const rightToLeft = await client.post(`/w/${workspaceId}/integrations/keys`, {
      name: 'מפתח פריסה \u200f',
    });
    assert.equal(rightToLeft.status, 201, 'right-to-left text and its marks are names like any other');
  });

  it('only goes to same-origin paths after signing in or out', async (t) => {
    const fixture = await startAppFixture(t);
    await ownerOfNewWorkspace(fixture);
    const cases: [string, string][] = [
      ['//evil.example/phish', '/w'],
      ['https://evil.example/', '/w'],
      ['/\\evil.example', '/w'],
      ['/%5Cevil.example', '/%5Cevil.example'],
      ['javascript:alert(1)', '/w'],
      ['/\t/evil.example', '/w'],
      ['/legal/terms?x=1', '/legal/terms?x=1'],
    ];
    for (const [next, expected] of cases) {
      const client = webClient(fixture.runtime.app);
      await client.get('/sign-in');
      const answer = await client.post('/sign-in', { email: 'owner@example.com', password: PASSWORD, next });
      assert.equal(answer.location, expected, next);
      await client.get('/legal/terms');
      const out = await client.post('/sign-out', { next });
      assert.equal(out.location, expected === '/w' ? '/' : expected, next);
    }
    const page = await webClient(fixture.runtime.app).get('/sign-in?next=//evil.example');
    assert.match(page.body, /name="next" value="\/w"/);
    const repeated = await webClient(fixture.runtime.app).get('/sign-in?next=/a&next=/b');
    assert.equal(repeated.status, 200, 'a repeated next is the default, not a 500');
    assert.match(repeated.body, /name="next" value="\/w"/);
  });

  it('keeps members out of owner and admin pages, and everyone else out of the workspace', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId } = await ownerOfNewWorkspace(fixture);
    const db = fixture.runtime.database.db;
    const member = await createUser(db, fixture.runtime.clock, {
      email: 'member@example.com',
      passwordHash: await hashPassword(PASSWORD),
    });
    assert.ok(member.ok);
    await db
      .insertInto('workspace_members')
      .values({
        id: newId('member', fixture.runtime.clock.now()),
        workspace_id: workspaceId,
        email: 'member@example.com',
        role: 'member',
        user_id: member.value.id,
        created_at: Date.now(),
      })
      .execute();
    const client: WebClient = webClient(fixture.runtime.app);
    await client.get('/sign-in');
    await client.post('/sign-in', { email: 'member@example.com', password: PASSWORD });

    const overview = await client.get(`/w/${workspaceId}`);
    assert.equal(overview.status, 200);
    assert.doesNotMatch(overview.body, /\/integrations"/, 'no Integrations tab for members');
    assert.equal((await client.get(`/w/${workspaceId}/integrations`)).status, 403);
    assert.equal((await client.post(`/w/${workspaceId}/integrations/keys`, { name: 'sneaky' })).status, 403);
    assert.equal(await keyCount(fixture), 0);

    const other = await fixture.provision({ email: 'other@example.com' });
    assert.equal((await client.get(`/w/${other.workspaceId}`)).status, 404);
    assert.equal((await client.get(`/w/${other.workspaceId}/integrations`)).status, 404);
  });

  it("cannot revoke another workspace's key through its own page", async (t) => {
    const fixture = await startAppFixture(t);
    const mine = await ownerOfNewWorkspace(fixture);
    const theirs = await fixture.provision({ email: 'other@example.com' });
    const otherClient = await acceptAsNewAccount(fixture.runtime.app, theirs.invitationPath);
    await otherClient.get(`/w/${theirs.workspaceId}/integrations`);
    await otherClient.post(`/w/${theirs.workspaceId}/integrations/keys`, { name: 'theirs' });
    const key = await fixture.runtime.database.db
      .selectFrom('api_keys')
      .select('id')
      .executeTakeFirstOrThrow();

    await mine.client.get(`/w/${mine.workspaceId}/integrations`);
    const answer = await mine.client.post(`/w/${mine.workspaceId}/integrations/keys/${key.id}/revoke`, {});
    assert.equal(answer.status, 404);
    const row = await fixture.runtime.database.db
      .selectFrom('api_keys')
      .select('revoked_at')
      .executeTakeFirstOrThrow();
    assert.equal(row.revoked_at, null);
  });
});
