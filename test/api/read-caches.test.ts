import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { API_KEY_CACHE_MS, API_PREFIX, revokeApiKey } from '../../src/api/index.ts';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { loadConfig } from '../../src/config.ts';
import { createRuntime } from '../../src/runtime.ts';
import { createOrganizationIn } from '../helpers/api.ts';
import { createTestDatabase, testDialect } from '../helpers/database.ts';
import { startTestRuntime } from '../helpers/runtime.ts';

/** Two instances of the service on one database (and one clock), as behind a load balancer. */
async function twoInstances(t: TestContext) {
  const database = await createTestDatabase({ shared: true });
  t.after(() => database.close());
  const a = await startTestRuntime(t, { database });
  const second = database.reopen();
  const b = await createRuntime(loadConfig({ NODE_ENV: 'test', BASE_URL: 'http://svc.test' }), {
    clock: a.clock,
    database: second,
  });
  t.after(async () => {
    await b.close();
    await second.close();
  });
  const org = await createOrganizationIn(a);
  const call = async (instance: typeof a.app, method: 'GET' | 'PATCH', path: string, json?: unknown) => {
    const response = await instance.inject({
      method,
      url: `${API_PREFIX}${path}`,
      headers: { authorization: `Bearer ${org.key}` },
      ...(json === undefined ? {} : { payload: json as object }),
    });
    return { status: response.statusCode, body: response.json() };
  };
  return { a, b, org, call };
}

describe(`read caches across instances on ${testDialect}`, () => {
  it('a control changed through one instance is in the next list read on the other', async (t) => {
    const { a, b, call } = await twoInstances(t);
    const before = await call(b.app, 'GET', '/controls?limit=5');
    assert.equal(before.status, 200);
    assert.equal((await call(b.app, 'GET', '/controls?limit=5')).body.data[0].status, 'not_started');
    const first = before.body.data[0];

    const patched = await call(a.app, 'PATCH', `/controls/${first.id}`, { status: 'implemented' });
    assert.equal(patched.status, 200);
    assert.equal((await call(b.app, 'GET', '/controls?limit=5')).body.data[0].status, 'implemented');
    assert.equal((await call(a.app, 'GET', '/controls?limit=5')).body.data[0].status, 'implemented');

    await call(b.app, 'PATCH', `/controls/${first.id}`, { notes: 'reviewed' });
    assert.equal((await call(a.app, 'GET', '/controls?limit=5')).body.data[0].notes, 'reviewed');
  });

  it('a control changed outside the API (another module, the CLI) is in the next list read', async (t) => {
    const { a, b, call } = await twoInstances(t);
    const first = (await call(b.app, 'GET', '/controls?limit=1')).body.data[0];
    await a.database.db
      .updateTable('controls')
      .set({ title: 'Renamed outside the API' })
      .where('id', '=', first.id)
      .execute();
    assert.equal(
      (await call(b.app, 'GET', '/controls?limit=1')).body.data[0].title,
      'Renamed outside the API',
    );
  });

  it('an owner deleted from the database is gone from the next list read (a foreign-key action)', async (t) => {
    const { a, b, org, call } = await twoInstances(t);
    const person = await a.app.inject({
      method: 'POST',
      url: `${API_PREFIX}/people`,
      headers: { authorization: `Bearer ${org.key}` },
      payload: { email: 'ada@example.com' },
    });
    assert.equal(person.statusCode, 201, person.body);
    const first = (await call(b.app, 'GET', '/controls?limit=1')).body.data[0];
    await call(a.app, 'PATCH', `/controls/${first.id}`, { owner_id: person.json().id });
    assert.equal((await call(b.app, 'GET', '/controls?limit=1')).body.data[0].owner_id, person.json().id);

    await a.database.db.deleteFrom('people').where('id', '=', person.json().id).execute();
    assert.equal((await call(b.app, 'GET', '/controls?limit=1')).body.data[0].owner_id, null);
  });

  it('a key revoked on one instance is refused there at once and on the other within the bound', async (t) => {
    const { a, b, org, call } = await twoInstances(t);
    assert.equal((await call(a.app, 'GET', '/me')).status, 200);
    assert.equal((await call(b.app, 'GET', '/me')).status, 200);

    await revokeApiKey(a.database.db, a.clock, org.keyId, OPERATOR_SOURCE);
    const onA = await call(a.app, 'GET', '/me');
    assert.deepEqual([onA.status, onA.body.code], [401, 'api_key_revoked']);

    a.clock.advance(API_KEY_CACHE_MS);
    const onB = await call(b.app, 'GET', '/me');
    assert.deepEqual([onB.status, onB.body.code], [401, 'api_key_revoked']);
  });
});
