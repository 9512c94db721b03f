// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PLAN_ENTITLEMENTS } from '../../src/catalog/index.ts';
import { walkPages } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebhookFixture } from '../webhooks/fixture.ts';

interface Hook {
  id: string;
  url: string;
  description: string | null;
  event_types: string[];
  status: string;
  disabled_reason: string | null;
  failing_since: string | null;
  updated_at: string;
  secret?: string;
}

const PUBLIC = 'https://hooks.example.com/svc';

/** A service where hooks.example.com is a public host and loopback targets are refused (production rules). */
async function productionRules(t: Parameters<typeof startWebhookFixture>[0]) {
  const hooks = await startWebhookFixture(t, { allowLoopback: false });
  hooks.hosts.set('hooks.example.com', ['93.184.215.14']);
  return hooks;
}

describe(`webhook subscriptions on ${testDialect}`, () => {
  it('subscribe with a whsec_ secret shown once; get and list never show it', async (t) => {
    const { api } = await productionRules(t);
    const created = await api.call('POST', '/hooks', {
      json: { url: PUBLIC, event_types: ['task.created', 'risk.created', 'task.created'], description: 'CI' },
    });
    assert.equal(created.status, 201);
    const hook: Hook = created.body;
    assert.match(hook.secret ?? '', /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.equal(Buffer.from(hook.secret?.slice(6) ?? '', 'base64').length, 32);
    assert.deepEqual(
      [hook.url, hook.event_types, hook.description, hook.status, hook.disabled_reason],
      [PUBLIC, ['task.created', 'risk.created'], 'CI', 'enabled', null],
    );

    const read = await api.call('GET', `/hooks/${hook.id}`);
    assert.equal(read.status, 200);
    const listed = await api.call('GET', '/hooks');
    const { secret: _shownOnce, ...withoutSecret } = hook;
    assert.deepEqual(read.body, withoutSecret);
    assert.deepEqual(listed.body.data, [withoutSecret]);
    assert.ok(
      !JSON.stringify(listed.body).includes(hook.secret?.slice(6, 20) ?? '?'),
      'no trace of the secret',
    );

    const everything = await api.call('POST', '/hooks', {
      json: { url: PUBLIC, event_types: ['task.created', '*'] },
    });
    assert.deepEqual(everything.body.event_types, ['*'], '* stands for every type');
  });

  it('refuse targets that are not public, with a code saying why', async (t) => {
    const { api, hosts } = await productionRules(t);
    hosts.set('internal.example', ['10.0.0.1']);
    hosts.set('mixed.example', ['93.184.215.14', '192.168.1.10']);
    hosts.set('metadata.example', ['fd00:ec2::254']);
    const cases: [string, string, RegExp][] = [
      ['https://127.0.0.1/hook', 'target_not_public', /127\.0\.0\.1 is a loopback address/],
      ['https://10.0.0.1/hook', 'target_not_public', /a private address/],
      ['https://169.254.169.254/latest/meta-data', 'target_not_public', /a cloud metadata address/],
      ['https://[::1]/hook', 'target_not_public', /::1 is a loopback address/],
      ['https://[::ffff:127.0.0.1]/hook', 'target_not_public', /loopback/],
      ['https://2130706433/hook', 'target_not_public', /127\.0\.0\.1 is a loopback address/],
      ['https://100.64.0.7/hook', 'target_not_public', /carrier-grade NAT/],
      ['https://[fe80::1]/hook', 'target_not_public', /link-local/],
      ['https://224.0.0.1/hook', 'target_not_public', /multicast/],
      ['https://0.0.0.0/hook', 'target_not_public', /unspecified/],
      ['https://internal.example/hook', 'target_not_public', /internal\.example resolves to 10\.0\.0\.1/],
      ['https://mixed.example/hook', 'target_not_public', /resolves to 192\.168\.1\.10/],
      ['https://metadata.example/hook', 'target_not_public', /cloud metadata/],
      ['https://localhost/hook', 'target_not_public', /loopback/],
      ['https://nowhere.example/hook', 'target_unresolvable', /does not resolve/],
      ['http://hooks.example.com/svc', 'url_not_https', /must use https/],
      ['https://user:pass@hooks.example.com/svc', 'url_has_credentials', /user name or password/],
    ];
    for (const [url, code, detail] of cases) {
      const response = await api.call('POST', '/hooks', { json: { url, event_types: ['*'] } });
      assert.equal(response.status, 400, url);
      assert.equal(response.body.code, code, url);
      assert.match(response.body.detail, detail, url);
      assert.equal(response.body.errors[0].path, 'body/url', url);
    }
    assert.equal((await api.call('GET', '/hooks')).body.data.length, 0, 'nothing was stored');
  });

  it('accept http on loopback only when the development setting allows it, never private ranges', async (t) => {
    const { api, hosts } = await startWebhookFixture(t);
    hosts.set('hooks.example.com', ['93.184.215.14']);
    for (const url of ['http://127.0.0.1:9/hook', 'http://[::1]:9/hook', 'http://localhost:9/hook']) {
      assert.equal(
        (await api.call('POST', '/hooks', { json: { url, event_types: ['*'] } })).status,
        201,
        url,
      );
    }
    for (const [url, code] of [
      ['http://10.0.0.1/hook', 'target_not_public'],
      ['https://192.168.0.1/hook', 'target_not_public'],
      ['http://hooks.example.com/svc', 'url_not_https'],
    ]) {
      const response = await api.call('POST', '/hooks', { json: { url, event_types: ['*'] } });
      assert.deepEqual([response.status, response.body.code], [400, code], url);
    }
  });

  it('refuse malformed bodies with 400 naming the field', async (t) => {
    const { api } = await productionRules(t);
    const cases: [unknown, string][] = [
      [{ event_types: ['*'] }, 'body/url'],
      [{ url: PUBLIC }, 'body/event_types'],
      [{ url: PUBLIC, event_types: [] }, 'body/event_types'],
      [{ url: PUBLIC, event_types: ['task.exploded'] }, 'body/event_types/0'],
      [{ url: PUBLIC, event_types: Array(30).fill('*') }, 'body/event_types'],
      [{ url: 'ftp://hooks.example.com/', event_types: ['*'] }, 'body/url'],
      [{ url: `${PUBLIC}/${'x'.repeat(2048)}`, event_types: ['*'] }, 'body/url'],
      [{ url: PUBLIC, event_types: ['*'], description: 'x'.repeat(501) }, 'body/description'],
      [{ url: PUBLIC, event_types: ['*'], secret: 'whsec_mine' }, 'body/secret'],
    ];
    for (const [json, path] of cases) {
      const response = await api.call('POST', '/hooks', { json });
      assert.equal(response.status, 400, JSON.stringify(json).slice(0, 80));
      assert.ok(
        response.body.errors.some((e: { path: string }) => e.path === path),
        `${path}: ${JSON.stringify(response.body.errors)}`,
      );
    }
    const { body: hook } = await api.call('POST', '/hooks', { json: { url: PUBLIC, event_types: ['*'] } });
    for (const [json, path] of [
      [{}, 'body'],
      [{ status: 'paused' }, 'body/status'],
      [{ disabled_reason: null }, 'body/disabled_reason'],
    ] as const) {
      const response = await api.call('PATCH', `/hooks/${hook.id}`, { json });
      assert.equal(response.status, 400, JSON.stringify(json));
      assert.ok(
        response.body.errors.some((e: { path: string }) => e.path === path),
        JSON.stringify(response.body),
      );
    }
    for (const grace of [-1, 604_801, 1.5]) {
      const response = await api.call('POST', `/hooks/${hook.id}/rotate-secret`, {
        json: { grace_period_seconds: grace },
      });
      assert.equal(response.status, 400, String(grace));
      assert.equal(response.body.errors[0].path, 'body/grace_period_seconds');
    }
  });

  it('list oldest first, page with limit and cursor, filter by status', async (t) => {
    const { api } = await productionRules(t);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      api.runtime.clock.advance(1000);
      ids.push(
        (await api.call('POST', '/hooks', { json: { url: `${PUBLIC}/${i}`, event_types: ['*'] } })).body.id,
      );
    }
    await api.call('PATCH', `/hooks/${ids[1]}`, { json: { status: 'disabled' } });
    const { items, pages } = await walkPages<Hook>(api, '/hooks?limit=2');
    assert.equal(pages, 3);
    assert.deepEqual(
      items.map((h) => h.id),
      ids,
    );
    const disabled = await api.call('GET', '/hooks?status=disabled');
    assert.deepEqual(
      disabled.body.data.map((h: Hook) => [h.id, h.disabled_reason]),
      [[ids[1], 'user']],
    );
    const bogus = await api.call('GET', '/hooks?status=broken');
    assert.equal(bogus.status, 400);
  });

  it('change url, event types, description and status; an unchanged PATCH keeps updated_at', async (t) => {
    const { api, hosts } = await productionRules(t);
    hosts.set('internal.example', ['172.16.5.4']);
    const { body: hook } = await api.call('POST', '/hooks', { json: { url: PUBLIC, event_types: ['*'] } });
    api.runtime.clock.advance(60_000);
    const changed = await api.call('PATCH', `/hooks/${hook.id}`, {
      json: { url: `${PUBLIC}/v2`, event_types: ['task.completed'], description: 'Slack bridge' },
    });
    assert.equal(changed.status, 200);
    assert.deepEqual(
      [changed.body.url, changed.body.event_types, changed.body.description],
      [`${PUBLIC}/v2`, ['task.completed'], 'Slack bridge'],
    );
    assert.notEqual(changed.body.updated_at, hook.updated_at);

    const refused = await api.call('PATCH', `/hooks/${hook.id}`, {
      json: { url: 'https://internal.example/' },
    });
    assert.deepEqual([refused.status, refused.body.code], [400, 'target_not_public']);
    assert.equal(
      (await api.call('GET', `/hooks/${hook.id}`)).body.url,
      `${PUBLIC}/v2`,
      'a refused URL is not stored',
    );

    api.runtime.clock.advance(60_000);
    const same = await api.call('PATCH', `/hooks/${hook.id}`, { json: { description: 'Slack bridge' } });
    assert.equal(same.body.updated_at, changed.body.updated_at);
    const cleared = await api.call('PATCH', `/hooks/${hook.id}`, { json: { description: null } });
    assert.equal(cleared.body.description, null);

    const disabled = await api.call('PATCH', `/hooks/${hook.id}`, { json: { status: 'disabled' } });
    assert.deepEqual([disabled.body.status, disabled.body.disabled_reason], ['disabled', 'user']);
    const enabled = await api.call('PATCH', `/hooks/${hook.id}`, { json: { status: 'enabled' } });
    assert.deepEqual([enabled.body.status, enabled.body.disabled_reason], ['enabled', null]);
  });

  it('delete a subscription with its deliveries; then it is gone', async (t) => {
    const { api } = await productionRules(t);
    const { body: hook } = await api.call('POST', '/hooks', { json: { url: PUBLIC, event_types: ['*'] } });
    await api.call('POST', '/tasks', { json: { title: 'Queued for the hook' } });
    const db = api.runtime.database.db;
    assert.equal((await db.selectFrom('webhook_deliveries').selectAll().execute()).length, 1);
    const deleted = await api.call('DELETE', `/hooks/${hook.id}`);
    assert.equal(deleted.status, 204);
    assert.equal((await api.call('GET', `/hooks/${hook.id}`)).status, 404);
    assert.equal((await api.call('DELETE', `/hooks/${hook.id}`)).status, 404);
    assert.equal((await db.selectFrom('webhook_deliveries').selectAll().execute()).length, 0);
    assert.equal(
      await api.runtime.jobs.drain(),
      2,
      'the queued attempt finds nothing to send (plus the invitation email)',
    );
  });

  it(`bound a Pro workspace to the plan's ${PLAN_ENTITLEMENTS.pro.webhookSubscriptions} subscriptions`, async (t) => {
    const { api } = await productionRules(t);
    for (let i = 0; i < PLAN_ENTITLEMENTS.pro.webhookSubscriptions; i++) {
      const response = await api.call('POST', '/hooks', {
        json: { url: `${PUBLIC}/${i}`, event_types: ['*'] },
      });
      assert.equal(response.status, 201);
    }
    const over = await api.call('POST', '/hooks', { json: { url: PUBLIC, event_types: ['*'] } });
    assert.deepEqual([over.status, over.body.code], [403, 'plan_limit_reached']);
    const other = await api.createOrganization('Other');
    const theirs = await api.call('POST', '/hooks', {
      key: other.key,
      json: { url: PUBLIC, event_types: ['*'] },
    });
    assert.equal(theirs.status, 201, 'the bound is per workspace');
  });

  it("keep every hooks route to the key's own organization: another one's ids answer 404", async (t) => {
    const { api } = await productionRules(t);
    const other = await api.createOrganization('Other');
    const { body: hook } = await api.call('POST', '/hooks', { json: { url: PUBLIC, event_types: ['*'] } });
    const test = await api.call('POST', `/hooks/${hook.id}/test`);
    assert.equal(test.status, 202);
    const delivery = test.body.id;
    const asOther = { key: other.key };
    const attempts: [string, string, unknown][] = [
      ['GET', `/hooks/${hook.id}`, undefined],
      ['PATCH', `/hooks/${hook.id}`, { status: 'disabled' }],
      ['DELETE', `/hooks/${hook.id}`, undefined],
      ['POST', `/hooks/${hook.id}/rotate-secret`, {}],
      ['POST', `/hooks/${hook.id}/test`, undefined],
      ['GET', `/hooks/${hook.id}/deliveries`, undefined],
      ['POST', `/hooks/${hook.id}/deliveries/${delivery}/redeliver`, undefined],
    ];
    for (const [method, path, json] of attempts) {
      const response = await api.call(method, path, { ...asOther, json });
      assert.deepEqual([response.status, response.body.code], [404, 'not_found'], `${method} ${path}`);
    }
    assert.deepEqual((await api.call('GET', '/hooks', asOther)).body.data, []);

    // Their own subscription cannot reach my delivery either.
    const { body: theirs } = await api.call('POST', '/hooks', {
      ...asOther,
      json: { url: PUBLIC, event_types: ['*'] },
    });
    const crossed = await api.call('POST', `/hooks/${theirs.id}/deliveries/${delivery}/redeliver`, asOther);
    assert.equal(crossed.status, 404);

    const mine = await api.call('GET', `/hooks/${hook.id}`);
    assert.deepEqual([mine.status, mine.body.status], [200, 'enabled'], 'untouched');
    const deliveries = await api.call('GET', `/hooks/${hook.id}/deliveries`);
    assert.equal(deliveries.body.data.length, 1);
  });

  it('answer 409 to a test event or a redelivery on a disabled subscription', async (t) => {
    const { api } = await productionRules(t);
    const { body: hook } = await api.call('POST', '/hooks', { json: { url: PUBLIC, event_types: ['*'] } });
    const { body: delivery } = await api.call('POST', `/hooks/${hook.id}/test`);
    await api.call('PATCH', `/hooks/${hook.id}`, { json: { status: 'disabled' } });
    for (const path of [`/hooks/${hook.id}/test`, `/hooks/${hook.id}/deliveries/${delivery.id}/redeliver`]) {
      const response = await api.call('POST', path);
      assert.deepEqual([response.status, response.body.code], [409, 'subscription_disabled'], path);
    }
  });
});
