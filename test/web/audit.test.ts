// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createUser, hashPassword } from '../../src/accounts/index.ts';
import { createApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { newId } from '../../src/shared/ids.ts';
import { testDialect } from '../helpers/database.ts';
import {
  type AppFixture,
  acceptAsNewAccount,
  startAppFixture,
  type WebClient,
  webClient,
} from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';

/** An owner signed in to a new workspace (its purchase and the acceptance are already in the log). */
async function ownerOfNewWorkspace(fixture: AppFixture) {
  const { workspaceId, invitationPath } = await fixture.provision({ email: 'ada@example.com', name: 'Acme' });
  const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  return { workspaceId, owner };
}

async function createKeyInApp(owner: WebClient, workspaceId: string, name: string) {
  await owner.get(`/w/${workspaceId}/integrations`);
  const created = await owner.post(`/w/${workspaceId}/integrations/keys`, { name });
  assert.equal(created.status, 201);
}

function csvRows(body: string): string[][] {
  // Enough CSV for these rows: fields without commas or quotes, or quoted as RFC 4180 says.
  return body
    .trimEnd()
    .split('\r\n')
    .map((line) => [...line.matchAll(/("(?:[^"]|"")*"|[^,]*)(?:,|$)/g)].map((m) => m[1] ?? '').slice(0, 12));
}

describe(`the audit log page on ${testDialect}`, () => {
  it('shows owners who did what, when and from where, newest first, filtered by action', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    fixture.runtime.clock.advance(1000);
    await createKeyInApp(owner, workspaceId, 'Agent <script>alert(1)</script>');

    const page = await owner.get(`/w/${workspaceId}/audit`);
    assert.equal(page.status, 200);
    const [, ...rows] = [...page.body.matchAll(/<tr role="row">([\s\S]*?)<\/tr>/g)].map((m) =>
      (m[1] ?? '')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    );
    assert.match(
      rows[0] ?? '',
      /ada@example\.com API key created Agent &lt;script&gt;alert\(1\)&lt;\/script&gt; 127\.0\.0\.1$/,
    );
    assert.ok(rows.some((row) => /ada@example\.com Signed in/.test(row)));
    assert.ok(
      rows.some((row) => /ada@example\.com Invitation accepted ada@example\.com \(owner\)/.test(row)),
    );
    assert.match(rows.at(-1) ?? '', /Agent checkout \(ACP\) Plan purchased Pro, one year –$/);
    assert.doesNotMatch(page.body, /<script>alert/, 'names are escaped');
    assert.match(page.body, /aria-current="page">Audit log</);

    const filtered = await owner.get(`/w/${workspaceId}/audit?action=api_key.created`);
    assert.equal([...filtered.body.matchAll(/<tr role="row">/g)].length - 1, 1, 'one row besides the header');
    assert.match(filtered.body, /<option value="api_key.created" selected>/);
    assert.equal((await owner.get(`/w/${workspaceId}/audit?action=nonsense`)).status, 400);
  });

  it('pages through older events with the keyset cursor and refuses a forged one', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    const { db } = fixture.runtime.database;
    // 55 keys: more than Pro allows.
    await db.updateTable('workspaces').set({ plan: 'enterprise' }).where('id', '=', workspaceId).execute();
    for (let n = 0; n < 55; n++) {
      fixture.runtime.clock.advance(1000);
      await createApiKey(db, fixture.runtime.clock, { workspaceId, name: `key ${n}` }, OPERATOR_SOURCE);
    }
    const first = await owner.get(`/w/${workspaceId}/audit`);
    assert.equal([...first.body.matchAll(/<tr role="row">/g)].length - 1, 50);
    assert.match(first.body, /key 54/);
    const next = /href="([^"]+)" rel="next"/.exec(first.body)?.[1]?.replaceAll('&amp;', '&');
    assert.ok(next);
    const second = await owner.get(next);
    assert.equal(second.status, 200);
    assert.doesNotMatch(second.body, /key 54\b/);
    assert.match(second.body, /key 0\b/);
    assert.match(second.body, /Plan purchased/);
    assert.doesNotMatch(second.body, /rel="next"/, 'the last page');

    const forged = await owner.get(
      `/w/${workspaceId}/audit?cursor=${Buffer.from('{"p":[1],"f":"x"}').toString('base64url')}`,
    );
    assert.equal(forged.status, 400);
    assert.match(forged.body, /<meta name="error-code" content="invalid_cursor">/);
  });

  it('exports the same list as CSV, with cells that would run as formulas neutralised', async (t) => {
    const fixture = await startAppFixture(t);
    const { workspaceId, owner } = await ownerOfNewWorkspace(fixture);
    fixture.runtime.clock.advance(1000);
    await createKeyInApp(owner, workspaceId, '=HYPERLINK("https://evil.example","click")');
    fixture.runtime.clock.advance(1000);
    await createKeyInApp(owner, workspaceId, '@SUM(1+1)');
    fixture.runtime.clock.advance(1000);
    await createKeyInApp(owner, workspaceId, '-2+3, "quoted"');

    const csv = await owner.get(`/w/${workspaceId}/audit.csv`);
    assert.equal(csv.status, 200);
    assert.match(String(csv.headers['content-type']), /^text\/csv; charset=utf-8/);
    assert.match(
      String(csv.headers['content-disposition']),
      new RegExp(`attachment; filename="audit-${workspaceId}\\.csv"`),
    );
    const [header, ...rows] = csvRows(csv.body);
    assert.deepEqual(header?.slice(0, 4), ['time', 'action', 'description', 'actor']);
    const targets = rows.filter((row) => row[1] === 'api_key.created').map((row) => row[8]);
    assert.deepEqual(targets, [
      `"'-2+3, ""quoted"""`,
      `'@SUM(1+1)`,
      `"'=HYPERLINK(""https://evil.example"",""click"")"`,
    ]);
    assert.equal(rows.at(-1)?.[1], 'plan.purchased');
    assert.ok(
      rows.every((row) => !/^[=+\-@\t\r]/.test(row.join(''))),
      'no row starts a formula',
    );

    const filtered = csvRows((await owner.get(`/w/${workspaceId}/audit.csv?action=plan.purchased`)).body);
    assert.deepEqual(
      filtered.slice(1).map((row) => row[1]),
      ['plan.purchased'],
    );
  });

  it('answers a member 403 and anyone outside the workspace 404, for the page and the CSV', async (t) => {
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
    const client = webClient(fixture.runtime.app);
    await client.get('/sign-in');
    await client.post('/sign-in', { email: 'member@example.com', password: PASSWORD });
    assert.equal((await client.get(`/w/${workspaceId}/audit`)).status, 403);
    const csv = await client.get(`/w/${workspaceId}/audit.csv`);
    assert.equal(csv.status, 403);
    assert.doesNotMatch(String(csv.headers['content-type']), /csv/);
    assert.doesNotMatch(
      (await client.get(`/w/${workspaceId}`)).body,
      /\/audit"/,
      'no Audit log tab for members',
    );

    const other = await fixture.provision({ email: 'other@example.com' });
    assert.equal((await client.get(`/w/${other.workspaceId}/audit`)).status, 404);
    assert.equal((await client.get(`/w/${other.workspaceId}/audit.csv`)).status, 404);
    const anonymous = await webClient(fixture.runtime.app).get(`/w/${workspaceId}/audit`);
    assert.equal(anonymous.status, 303);
  });
});
