// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createUser, hashPassword } from '../../src/accounts/index.ts';
import { createApiKey, revokeApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { DAY_MS, MINUTE_MS } from '../../src/shared/clock.ts';
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

interface Owner {
  fixture: AppFixture;
  workspaceId: string;
  client: WebClient;
  /** `/w/{id}/integrations` */
  page: string;
}

async function signedInOwner(t: TestContext): Promise<Owner> {
  const fixture = await startAppFixture(t);
  const { workspaceId, invitationPath } = await fixture.provision({ email: 'owner@example.com' });
  const client = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  const page = `/w/${workspaceId}/integrations`;
  await client.get(page);
  return { fixture, workspaceId, client, page };
}

/** Creates a key through the form; answers its id and secret. */
async function createKey(owner: Owner, name = 'Agent', expiresIn = 'never') {
  const created = await owner.client.post(`${owner.page}/keys`, { name, expires_in: expiresIn });
  assert.equal(created.status, 201);
  const key = /id="new-key-value">(svc_live_\w+)</.exec(created.body)?.[1];
  assert.ok(key);
  const row = await owner.fixture.runtime.database.db
    .selectFrom('api_keys')
    .select('id')
    .orderBy('id', 'desc')
    .executeTakeFirstOrThrow();
  return { id: row.id, key };
}

async function meStatus(owner: Owner, key: string): Promise<{ status: number; code?: string }> {
  const answer = await owner.fixture.runtime.app.inject({
    url: '/api/v1/me',
    headers: { authorization: `Bearer ${key}` },
  });
  return { status: answer.statusCode, code: answer.statusCode === 200 ? undefined : answer.json().code };
}

async function keyCount(owner: Owner): Promise<number> {
  const row = await owner.fixture.runtime.database.db
    .selectFrom('api_keys')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The text of a key's row in the list, without tags. */
function rowOf(html: string, hint: string): string {
  const row = [...html.matchAll(/<tr role="row">([\s\S]*?)<\/tr>/g)]
    .map((match) =>
      (match[1] ?? '')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .find((text) => text.includes(hint) && !text.includes(`replaces ${hint}`));
  assert.ok(row, `no row for ${hint} in ${html}`);
  return row;
}

describe(`rotating API keys in the app on ${testDialect}`, () => {
  it('rotates a key with the overlap chosen: the new key is shown once, the old one works until then', async (t) => {
    const owner = await signedInOwner(t);
    const old = await createKey(owner);
    const oldHint = `${old.key.slice(0, 13)}…${old.key.slice(-4)}`;
    const list = await owner.client.get(owner.page);
    assert.ok(list.body.includes(`href="${owner.page}/keys/${old.id}/rotate"`), 'a rotate link per key');

    const form = await owner.client.get(`${owner.page}/keys/${old.id}/rotate`);
    assert.equal(form.status, 200);
    for (const label of [
      'Now: the old key stops working at once',
      'In 1 hour',
      'In 24 hours',
      'In 7 days',
      'In 90 days',
    ]) {
      assert.ok(form.body.includes(label), label);
    }
    assert.match(form.body, /value="24h" checked/, 'a day by default');

    const rotated = await owner.client.post(`${owner.page}/keys/${old.id}/rotate`, { overlap: '1h' });
    assert.equal(rotated.status, 201);
    const key = /id="new-key-value">(svc_live_\w+)</.exec(rotated.body)?.[1];
    assert.ok(key && key !== old.key);
    assert.match(
      rotated.body,
      new RegExp(
        `It replaces <code class="key-hint">${oldHint}</code>, which keeps working until <time datetime="2026-03-01T13:00:00.000Z">`,
      ),
    );
    assert.deepEqual(await meStatus(owner, key), { status: 200, code: undefined });
    assert.deepEqual(await meStatus(owner, old.key), { status: 200, code: undefined });

    const after = await owner.client.get(owner.page);
    assert.ok(!after.body.includes(key), 'the new key is shown once');
    assert.match(rowOf(after.body, oldHint), /Active until 1 Mar 2026, 13:00 UTC \(replaced\)/);
    assert.doesNotMatch(rowOf(after.body, oldHint), /Rotate/, 'a replaced key is not rotated again');
    assert.match(after.body, new RegExp(`replaces <code class="key-hint">${oldHint}</code>`));

    owner.fixture.runtime.clock.advance(59 * MINUTE_MS);
    assert.equal((await meStatus(owner, old.key)).status, 200);
    owner.fixture.runtime.clock.advance(2 * MINUTE_MS);
    assert.deepEqual(await meStatus(owner, old.key), { status: 401, code: 'api_key_revoked' });
    assert.equal((await meStatus(owner, key)).status, 200);
    // An hour is past the session's idle timeout: sign in again to read the list.
    const client = webClient(owner.fixture.runtime.app);
    await client.get('/sign-in');
    await client.post('/sign-in', { email: 'owner@example.com', password: PASSWORD });
    assert.match(rowOf((await client.get(owner.page)).body, oldHint), /Revoked 1 Mar 2026, 13:00 UTC/);
  });

  it('stops the old key at once when told so, and keeps the expiry of the key it replaces', async (t) => {
    const owner = await signedInOwner(t);
    const old = await createKey(owner, 'Expiring', '30');
    const rotated = await owner.client.post(`${owner.page}/keys/${old.id}/rotate`, { overlap: 'now' });
    assert.equal(rotated.status, 201);
    assert.match(rotated.body, /which has stopped working/);
    const key = /id="new-key-value">(svc_live_\w+)</.exec(rotated.body)?.[1];
    assert.ok(key);
    assert.deepEqual(await meStatus(owner, old.key), { status: 401, code: 'api_key_revoked' });
    assert.equal((await meStatus(owner, key)).status, 200);
    owner.fixture.runtime.clock.advance(30 * DAY_MS);
    assert.deepEqual(await meStatus(owner, key), { status: 401, code: 'api_key_expired' });
  });

  it('refuses an overlap it does not offer (longer than 90 days, or none) and creates nothing', async (t) => {
    const owner = await signedInOwner(t);
    const old = await createKey(owner);
    for (const overlap of ['100d', '91d', '', '0']) {
      const answer = await owner.client.post(`${owner.page}/keys/${old.id}/rotate`, { overlap });
      assert.equal(answer.status, 400, overlap);
      assert.match(answer.body, /<a href="#overlap">Choose when the old key stops working\.<\/a>/);
    }
    assert.equal(await keyCount(owner), 1);
    assert.equal((await meStatus(owner, old.key)).status, 200);
  });

  it('refuses revoked, expired and already replaced keys (409), and keys of other workspaces (404)', async (t) => {
    const owner = await signedInOwner(t);
    const { db } = owner.fixture.runtime.database;
    const clock = owner.fixture.runtime.clock;
    const revoked = await createKey(owner, 'Revoked');
    await revokeApiKey(db, clock, revoked.id, OPERATOR_SOURCE);
    const expired = await createApiKey(
      db,
      clock,
      {
        workspaceId: owner.workspaceId,
        name: 'Expired',
        expiresAt: new Date(clock.now().getTime() - 1),
      },
      OPERATOR_SOURCE,
    );
    assert.ok(expired.ok);
    const replaced = await createKey(owner, 'Replaced');
    assert.equal(
      (await owner.client.post(`${owner.page}/keys/${replaced.id}/rotate`, { overlap: '7d' })).status,
      201,
    );
    const theirs = await owner.fixture.provision({ email: 'other@example.com' });
    const foreign = await createApiKey(
      db,
      clock,
      { workspaceId: theirs.workspaceId, name: 'Theirs' },
      OPERATOR_SOURCE,
    );
    assert.ok(foreign.ok);
    const before = await keyCount(owner);

    for (const id of [revoked.id, expired.value.info.id, replaced.id]) {
      const page = await owner.client.get(`${owner.page}/keys/${id}/rotate`);
      assert.equal(page.status, 409, id);
      assert.match(page.body, /<meta name="error-code" content="key_not_rotatable">/);
      assert.equal(
        (await owner.client.post(`${owner.page}/keys/${id}/rotate`, { overlap: 'now' })).status,
        409,
      );
    }
    assert.equal((await owner.client.get(`${owner.page}/keys/${foreign.value.info.id}/rotate`)).status, 404);
    assert.equal(
      (await owner.client.post(`${owner.page}/keys/${foreign.value.info.id}/rotate`, { overlap: 'now' }))
        .status,
      404,
    );
    assert.equal(
      (await owner.client.post(`${owner.page}/keys/key_nothing/rotate`, { overlap: 'now' })).status,
      404,
    );
    assert.equal(await keyCount(owner), before);
    assert.equal((await meStatus(owner, foreign.value.key)).status, 200);
  });

  it('lets only owners and admins rotate: members get 403', async (t) => {
    const owner = await signedInOwner(t);
    const key = await createKey(owner);
    const db = owner.fixture.runtime.database.db;
    const member = await createUser(db, owner.fixture.runtime.clock, {
      email: 'member@example.com',
      passwordHash: await hashPassword(PASSWORD),
    });
    assert.ok(member.ok);
    await db
      .insertInto('workspace_members')
      .values({
        id: newId('member', owner.fixture.runtime.clock.now()),
        workspace_id: owner.workspaceId,
        email: 'member@example.com',
        role: 'member',
        user_id: member.value.id,
        created_at: Date.now(),
      })
      .execute();
    const client = webClient(owner.fixture.runtime.app);
    await client.get('/sign-in');
    await client.post('/sign-in', { email: 'member@example.com', password: PASSWORD });
    await client.get(`/w/${owner.workspaceId}`);
    assert.equal((await client.get(`${owner.page}/keys/${key.id}/rotate`)).status, 403);
    assert.equal((await client.post(`${owner.page}/keys/${key.id}/rotate`, { overlap: 'now' })).status, 403);
    assert.equal(await keyCount(owner), 1);
    assert.equal((await meStatus(owner, key.key)).status, 200);
  });
});
