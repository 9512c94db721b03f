// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { WebhookVerificationError } from 'standardwebhooks';
import { OPERATOR_SOURCE } from '../../src/audit/index.ts';
import { DAY_MS, HOUR_MS } from '../../src/shared/clock.ts';
import { EVENT_RETENTION_MS, rotateSecret } from '../../src/webhooks/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startWebhookFixture, verifyAt, type WebhookFixture } from './fixture.ts';
import type { ReceivedRequest } from './receiver.ts';

/** Verifies `request` as if its signature header held only `entry`. */
function verifyEntry(t: TestContext, secret: string, request: ReceivedRequest, entry: string | undefined) {
  return verifyAt(t, secret, { ...request, headers: { ...request.headers, 'webhook-signature': entry } });
}

async function deliverOneTask(hooks: WebhookFixture, title: string): Promise<ReceivedRequest> {
  await hooks.api.call('POST', '/tasks', { json: { title } });
  await hooks.deliver();
  const request = hooks.receiver.requests.at(-1);
  assert.equal(JSON.parse(request?.body ?? '{}').data.title, title);
  return request as ReceivedRequest;
}

const signatures = (request: ReceivedRequest) => String(request.headers['webhook-signature']).split(' ');

describe(`webhook secret rotation on ${testDialect}`, () => {
  it('signs with both secrets, new first, during the grace period; with the new one only after it', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { id, secret: oldSecret } = await hooks.subscribe(['task.created']);
    const rotated = await hooks.api.call('POST', `/hooks/${id}/rotate-secret`, {
      json: { grace_period_seconds: 3600 },
    });
    assert.equal(rotated.status, 200);
    const newSecret: string = rotated.body.secret;
    assert.match(newSecret, /^whsec_/);
    assert.notEqual(newSecret, oldSecret);
    const graceEnds = new Date(hooks.api.runtime.clock.now().getTime() + HOUR_MS).toISOString();
    assert.equal(rotated.body.previous_secret_expires_at, graceEnds);
    assert.equal((await hooks.api.call('GET', `/hooks/${id}`)).body.secret, undefined);

    const during = await deliverOneTask(hooks, 'During the grace period');
    const [first, second] = signatures(during);
    assert.equal(signatures(during).length, 2);
    verifyAt(t, newSecret, during);
    verifyAt(t, oldSecret, during);
    verifyEntry(t, newSecret, during, first);
    verifyEntry(t, oldSecret, during, second);
    assert.throws(
      () => verifyEntry(t, oldSecret, during, first),
      WebhookVerificationError,
      'the new one is first',
    );

    hooks.api.runtime.clock.advance(HOUR_MS);
    const after = await deliverOneTask(hooks, 'After the grace period');
    assert.equal(signatures(after).length, 1);
    verifyAt(t, newSecret, after);
    assert.throws(() => verifyAt(t, oldSecret, after), WebhookVerificationError);
    assert.equal((await hooks.api.call('GET', `/hooks/${id}`)).body.previous_secret_expires_at, null);
  });

  it('defaults to a one-day grace period, drops the old secret at once with 0, keeps only the latest old one', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { id, secret: first } = await hooks.subscribe(['task.created']);
    const defaulted = await hooks.api.call('POST', `/hooks/${id}/rotate-secret`);
    const dayLater = new Date(hooks.api.runtime.clock.now().getTime() + DAY_MS).toISOString();
    assert.equal(defaulted.body.previous_secret_expires_at, dayLater);
    const third = (await hooks.api.call('POST', `/hooks/${id}/rotate-secret`, { json: {} })).body.secret;
    const twice = await deliverOneTask(hooks, 'Rotated twice');
    verifyEntry(t, third, twice, signatures(twice)[0]);
    verifyEntry(t, defaulted.body.secret, twice, signatures(twice)[1]);
    assert.throws(
      () => verifyAt(t, first, twice),
      WebhookVerificationError,
      'the first secret no longer signs',
    );

    const now = await hooks.api.call('POST', `/hooks/${id}/rotate-secret`, {
      json: { grace_period_seconds: 0 },
    });
    assert.equal(now.body.previous_secret_expires_at, null);
    const immediate = await deliverOneTask(hooks, 'No grace');
    assert.deepEqual(signatures(immediate).length, 1);
    verifyAt(t, now.body.secret, immediate);
  });
  it('takes turns when rotated twice at once: the secret kept in its grace period is the other answered one, not the one both read', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { runtime, org } = hooks.api;
    const { id, secret: original } = await hooks.subscribe(['task.created']);
    // Called in process, so both read the subscription before either writes (over HTTP they
    // often arrive one after the other).
    const rotate = async () => {
      const rotated = await rotateSecret(
        { db: runtime.database.db, clock: runtime.clock },
        org.workspaceId,
        id,
        { grace_period_seconds: 3600 },
        OPERATOR_SOURCE,
      );
      return rotated.ok ? rotated.value.secret : assert.fail(rotated.error.code);
    };
    let before = original;
    let answered: string[] = [];
    for (let round = 0; round < 5; round++) {
      answered = await Promise.all([rotate(), rotate()]);
      const stored = await runtime.database.db
        .selectFrom('webhook_subscriptions')
        .select(['secret', 'previous_secret'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      assert.deepEqual(
        new Set([stored.secret, stored.previous_secret]),
        new Set(answered),
        `round ${round}: the secret in force and the one in its grace period are the two answered, not ${before === stored.previous_secret ? 'the one both read' : 'another'}`,
      );
      before = stored.secret;
    }
    const request = await deliverOneTask(hooks, 'After the rotations');
    const [inForce, inGrace] = signatures(request);
    verifyEntry(t, before, request, inForce);
    verifyEntry(t, answered.find((secret) => secret !== before) ?? '', request, inGrace);
    assert.throws(() => verifyAt(t, original, request), WebhookVerificationError);
  });
});

describe(`webhook event retention on ${testDialect}`, () => {
  it('deletes events older than the retention whose deliveries all finished, with their attempts', async (t) => {
    const hooks = await startWebhookFixture(t);
    const { api, receiver } = hooks;
    const db = api.runtime.database.db;
    await api.call('POST', '/people', { json: { email: 'before@example.com' } });
    const { id } = await hooks.subscribe(['task.created']);
    receiver.answer((request) =>
      JSON.parse(request.body).data.title === 'stuck' ? { status: 500 } : { status: 204 },
    );
    await api.call('POST', '/tasks', { json: { title: 'done' } });
    await api.call('POST', '/tasks', { json: { title: 'stuck' } });
    await hooks.deliver();
    await api.call('POST', `/hooks/${id}/rotate-secret`, { json: { grace_period_seconds: 60 } });

    api.runtime.clock.advance(EVENT_RETENTION_MS - 1);
    await api.runtime.jobs.runSweeps();
    assert.equal(
      (await db.selectFrom('webhook_events').select('id').execute()).length,
      3,
      'not old enough yet',
    );

    api.runtime.clock.advance(1);
    await api.runtime.jobs.runSweeps();
    const events = await db.selectFrom('webhook_events').select('payload').execute();
    assert.deepEqual(
      events.map((event) => JSON.parse(event.payload).data.title),
      ['stuck'],
      'an event with a pending delivery stays',
    );
    const deliveries = (await api.call('GET', `/hooks/${id}/deliveries`)).body.data;
    assert.deepEqual(
      deliveries.map((d: { status: string }) => d.status),
      ['pending'],
    );
    assert.equal((await db.selectFrom('webhook_attempts').select('id').execute()).length, 1);
    const subscription = await db
      .selectFrom('webhook_subscriptions')
      .select('previous_secret')
      .executeTakeFirst();
    assert.equal(subscription?.previous_secret, null, 'an expired old secret is not kept');
  });
});
