// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createApiKey, rotateApiKey } from '../../src/api-keys/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { PLAN_ENTITLEMENTS } from '../../src/catalog/index.ts';
import { DAY_MS } from '../../src/shared/clock.ts';
import { endElapsedTerms } from '../../src/workspace/index.ts';
import { testDialect } from '../helpers/database.ts';
import { type AppFixture, acceptAsNewAccount, startAppFixture, type WebClient } from '../helpers/web.ts';

const PASSWORD = 'correct horse battery staple';
const OWNER = 'owner@example.com';

interface Setup {
  fixture: AppFixture;
  workspaceId: string;
  owner: WebClient;
  keyId: string;
  key: string;
  apiUrl: string;
}

/** A workspace with a signed-in owner and one API key, the service on loopback; Pro unless moved to Free. */
async function workspaceWithKey(t: TestContext, onFree: boolean): Promise<Setup> {
  const fixture = await startAppFixture(t);
  const apiUrl = await fixture.runtime.app.listen({ host: '127.0.0.1', port: 0 });
  const { workspaceId, invitationPath } = await fixture.provision({ email: OWNER, name: 'Acme' });
  const owner = await acceptAsNewAccount(fixture.runtime.app, invitationPath, PASSWORD);
  const created = await createApiKey(
    fixture.runtime.database.db,
    fixture.runtime.clock,
    { workspaceId, name: 'agent' },
    OPERATOR_SOURCE,
  );
  assert.ok(created.ok);
  if (onFree) {
    fixture.runtime.clock.advance(400 * DAY_MS);
    const ended = await endElapsedTerms(fixture.runtime.database.db, {
      clock: fixture.runtime.clock,
      baseUrl: fixture.runtime.config.baseUrl,
    });
    assert.deepEqual(
      ended.map((term) => term.planNow),
      ['free'],
    );
    await owner.get('/sign-in');
    assert.equal((await owner.post('/sign-in', { email: OWNER, password: PASSWORD })).status, 303);
  }
  return { fixture, workspaceId, owner, keyId: created.value.info.id, key: created.value.key, apiUrl };
}

/** `GET /api/v1/me` with the key, over the socket: its status and problem code. */
async function me(setup: Setup, key: string): Promise<{ status: number; code?: string }> {
  const response = await fetch(`${setup.apiUrl}/api/v1/me`, { headers: { authorization: `Bearer ${key}` } });
  const body = (await response.json()) as { code?: string };
  return { status: response.status, code: response.status === 200 ? undefined : body.code };
}

async function keysOf(setup: Setup) {
  return setup.fixture.runtime.database.db
    .selectFrom('api_keys')
    .select(['id', 'replaces_key_id'])
    .where('workspace_id', '=', setup.workspaceId)
    .execute();
}

describe(`rotating an API key within the plan on ${testDialect}`, () => {
  it('refuses an overlap at the limit in the app (the old key keeps working); without one, the new key replaces it', async (t) => {
    const setup = await workspaceWithKey(t, true);
    assert.equal(PLAN_ENTITLEMENTS.free.apiKeys, 1, 'the one key fills Free');
    const page = `/w/${setup.workspaceId}/integrations/keys/${setup.keyId}/rotate`;
    await setup.owner.get(page);

    const refused = await setup.owner.post(page, { overlap: '24h' });
    assert.equal(refused.status, 403);
    assert.match(refused.body, /<meta name="error-code" content="plan_limit_reached">/);
    assert.ok(refused.body.includes(`/w/${setup.workspaceId}/billing`), 'names where to upgrade');
    assert.match(refused.body, /choose “Now” to replace the key without an overlap/);
    assert.match(refused.body, /id="overlap-now" name="overlap" value="now" checked/);
    assert.deepEqual(await me(setup, setup.key), { status: 200, code: undefined }, 'the old key still works');
    assert.equal((await keysOf(setup)).length, 1, 'no key was made');

    const rotated = await setup.owner.post(page, { overlap: 'now' });
    assert.equal(rotated.status, 201);
    const fresh = /id="new-key-value">(svc_live_\w+)</.exec(rotated.body)?.[1];
    assert.ok(fresh);
    assert.equal((await me(setup, fresh)).status, 200);
    assert.deepEqual(await me(setup, setup.key), { status: 401, code: 'api_key_revoked' });
  });

  it('refuses an overlap at the limit in the domain function, allows it below the limit, and always allows replacing', async (t) => {
    const setup = await workspaceWithKey(t, true);
    const { db } = setup.fixture.runtime.database;
    const clock = setup.fixture.runtime.clock;
    const tomorrow = () => new Date(clock.now().getTime() + DAY_MS);
    assert.deepEqual(await rotateApiKey(db, clock, setup.keyId, OPERATOR_SOURCE, tomorrow()), {
      ok: false,
      error: { code: 'plan_limit_reached', resource: 'api_keys', limit: 1, plan: 'free' },
    });
    const replaced = await rotateApiKey(db, clock, setup.keyId, OPERATOR_SOURCE);
    assert.ok(replaced.ok);

    const pro = await workspaceWithKey(t, false);
    const overlapping = await rotateApiKey(
      pro.fixture.runtime.database.db,
      pro.fixture.runtime.clock,
      pro.keyId,
      OPERATOR_SOURCE,
      new Date(pro.fixture.runtime.clock.now().getTime() + DAY_MS),
    );
    assert.ok(overlapping.ok, 'Pro has room for both keys during the overlap');
    assert.equal((await me(pro, pro.key)).status, 200);
    assert.equal((await me(pro, overlapping.value.key)).status, 200);
  });

  it('makes one successor of two concurrent rotations; the other is told the key was rotated already', async (t) => {
    const setup = await workspaceWithKey(t, false);
    const { db } = setup.fixture.runtime.database;
    const clock = setup.fixture.runtime.clock;
    const until = new Date(clock.now().getTime() + DAY_MS);
    const results = await Promise.all([
      rotateApiKey(db, clock, setup.keyId, OPERATOR_SOURCE, until),
      rotateApiKey(db, clock, setup.keyId, OPERATOR_SOURCE, until),
    ]);
    assert.equal(results.filter((result) => result.ok).length, 1);
    const lost = results.find((result) => !result.ok);
    assert.deepEqual(lost, { ok: false, error: { code: 'already_rotated', until } });
    const successors = (await keysOf(setup)).filter((key) => key.replaces_key_id === setup.keyId);
    assert.equal(successors.length, 1);
  });

  it('answers the second of two concurrent rotations in the app with the 409 page', async (t) => {
    const setup = await workspaceWithKey(t, false);
    const page = `/w/${setup.workspaceId}/integrations/keys/${setup.keyId}/rotate`;
    await setup.owner.get(page);
    const answers = await Promise.all([
      setup.owner.post(page, { overlap: '24h' }),
      setup.owner.post(page, { overlap: '24h' }),
    ]);
    assert.deepEqual(answers.map((answer) => answer.status).sort(), [201, 409]);
    const conflict = answers.find((answer) => answer.status === 409);
    assert.match(conflict?.body ?? '', /<meta name="error-code" content="key_not_rotatable">/);
    assert.match(conflict?.body ?? '', /already replaced by a rotation/);
    const successors = (await keysOf(setup)).filter((key) => key.replaces_key_id === setup.keyId);
    assert.equal(successors.length, 1);
  });
});
