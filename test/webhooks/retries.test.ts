// db-scope: both

import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { createSmtpTransport } from '../../src/mail/index.ts';
import { DAY_MS, HOUR_MS } from '../../src/shared/clock.ts';
import { MAX_DELIVERY_ATTEMPTS, RETRY_DELAYS_MS, RETRY_JITTER } from '../../src/webhooks/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startTestSmtpServer } from '../helpers/smtp.ts';
import { startWebhookFixture, verifyAt, type WebhookFixture } from './fixture.ts';

interface Delivery {
  id: string;
  status: string;
  attempt_count: number;
  next_attempt_at: string | null;
  attempts: {
    number: number;
    started_at: string;
    status_code: number | null;
    response_excerpt: string | null;
  }[];
}

async function onlyDelivery(hooks: WebhookFixture, subscriptionId: string): Promise<Delivery> {
  const { body } = await hooks.api.call('GET', `/hooks/${subscriptionId}/deliveries`);
  assert.equal(body.data.length, 1);
  return body.data[0];
}

const at = (iso: string | null) => new Date(iso ?? NaN).getTime();

/** Moves the clock to the delivery's next attempt (not a millisecond earlier does it run) and runs it. */
async function runNextAttempt(hooks: WebhookFixture, subscriptionId: string): Promise<Delivery> {
  const before = await onlyDelivery(hooks, subscriptionId);
  const count = hooks.receiver.requests.length;
  hooks.api.runtime.clock.set(new Date(at(before.next_attempt_at) - 1));
  await hooks.deliver();
  assert.equal(hooks.receiver.requests.length, count, 'nothing is sent before the next attempt is due');
  hooks.api.runtime.clock.set(new Date(at(before.next_attempt_at)));
  await hooks.deliver();
  assert.equal(hooks.receiver.requests.length, count + 1);
  return onlyDelivery(hooks, subscriptionId);
}

async function failingHook(t: TestContext, options: Parameters<typeof startWebhookFixture>[1] = {}) {
  const hooks = await startWebhookFixture(t, options);
  const hook = await hooks.subscribe(['task.created']);
  return { hooks, hook };
}

describe(`webhook retries on ${testDialect}`, () => {
  it('retries a failing receiver on the schedule, each delay within its jitter bounds, until a 2xx', async (t) => {
    const { hooks, hook } = await failingHook(t);
    hooks.receiver.answer((_request, index) =>
      index < MAX_DELIVERY_ATTEMPTS - 1 ? { status: 500, body: 'database down' } : { status: 200 },
    );
    await hooks.api.call('POST', '/tasks', { json: { title: 'Retry me' } });
    await hooks.deliver();
    let delivery = await onlyDelivery(hooks, hook.id);
    for (const [index, scheduled] of RETRY_DELAYS_MS.entries()) {
      const failedAt = at(delivery.attempts[index]?.started_at ?? null);
      const wait = at(delivery.next_attempt_at) - failedAt;
      assert.ok(
        wait >= scheduled * (1 - RETRY_JITTER) && wait <= scheduled * (1 + RETRY_JITTER),
        `retry ${index + 1} after ${wait} ms, scheduled ${scheduled} ms`,
      );
      delivery = await runNextAttempt(hooks, hook.id);
    }
    assert.equal(delivery.status, 'succeeded');
    assert.deepEqual(
      delivery.attempts.map((a) => [a.number, a.status_code]),
      [...RETRY_DELAYS_MS.map((_, i) => [i + 1, 500]), [MAX_DELIVERY_ATTEMPTS, 200]],
    );
    assert.equal(delivery.attempts[0]?.response_excerpt, 'database down');

    const requests = hooks.receiver.requests;
    assert.equal(
      new Set(requests.map((r) => r.headers['webhook-id'])).size,
      1,
      'one webhook-id across retries',
    );
    const times = requests.map((r) => Number(r.headers['webhook-timestamp']));
    for (const [index, scheduled] of RETRY_DELAYS_MS.entries()) {
      const gap = ((times[index + 1] ?? 0) - (times[index] ?? 0)) * 1000;
      assert.ok(Math.abs(gap - scheduled) <= scheduled * RETRY_JITTER + 1000, `gap ${index + 1}: ${gap} ms`);
    }
    for (const request of requests) verifyAt(t, hook.secret, request);
    const total = (times.at(-1) ?? 0) - (times[0] ?? 0);
    assert.ok(total > 20 * 3600 && total < 34 * 3600, `about a day of retries (${total} s)`);
  });

  it('honours Retry-After (seconds or an HTTP date) to postpone, never to hurry, at most one day', async (t) => {
    const { hooks, hook } = await failingHook(t);
    const clock = hooks.api.runtime.clock;
    const answers = [
      { status: 503, headers: { 'retry-after': '120' } },
      {
        status: 429,
        headers: { 'retry-after': new Date(clock.now().getTime() + 3 * HOUR_MS).toUTCString() },
      },
      { status: 503, headers: { 'retry-after': '9999999' } },
      { status: 503, headers: { 'retry-after': '1' } },
      { status: 503, headers: { 'retry-after': 'soon' } },
    ];
    hooks.receiver.answer((_request, index) => answers[index] ?? { status: 200 });
    await hooks.api.call('POST', '/tasks', { json: { title: 'Busy receiver' } });
    await hooks.deliver();
    const waits: number[] = [];
    let delivery = await onlyDelivery(hooks, hook.id);
    for (let attempt = 1; attempt <= answers.length; attempt++) {
      waits.push(at(delivery.next_attempt_at) - at(delivery.attempts[attempt - 1]?.started_at ?? null));
      delivery = await runNextAttempt(hooks, hook.id);
    }
    assert.equal(waits[0], 120_000, 'delta seconds, longer than the 5 s step');
    // The date was taken before the first retry (+120 s); it is counted from the second attempt.
    assert.equal(waits[1], 3 * HOUR_MS - 120_000, 'an HTTP date');
    assert.equal(waits[2], DAY_MS, 'clamped to one day');
    const step = (n: number) => RETRY_DELAYS_MS[n] ?? 0;
    assert.ok(waits[3] !== undefined && waits[3] >= step(3) * 0.8, 'a shorter Retry-After does not hurry');
    assert.ok(
      waits[4] !== undefined && Math.abs(waits[4] - step(4)) <= step(4) * RETRY_JITTER,
      'unreadable: schedule',
    );
    assert.equal(delivery.status, 'succeeded');
  });

  it('stops at once and disables the subscription when the receiver answers 410 Gone', async (t) => {
    const { hooks, hook } = await failingHook(t);
    hooks.receiver.answer(() => ({ status: 410, body: 'no such hook' }));
    await hooks.api.call('POST', '/tasks', { json: { title: 'Gone' } });
    await hooks.deliver();
    const delivery = await onlyDelivery(hooks, hook.id);
    assert.deepEqual(
      [delivery.status, delivery.attempt_count, delivery.next_attempt_at],
      ['failed', 1, null],
    );
    const subscription = (await hooks.api.call('GET', `/hooks/${hook.id}`)).body;
    assert.deepEqual([subscription.status, subscription.disabled_reason], ['disabled', 'gone']);

    hooks.api.runtime.clock.advance(DAY_MS);
    await hooks.api.call('POST', '/tasks', { json: { title: 'After' } });
    await hooks.deliver();
    assert.equal(hooks.receiver.requests.length, 1, 'nothing more is sent');
    const db = hooks.api.runtime.database.db;
    const mails = await db
      .selectFrom('mail_messages')
      .select(['template', 'to_address', 'subject'])
      .execute();
    const [invitation] = await db.selectFrom('workspace_invitations').select('email').execute();
    assert.deepEqual(
      mails
        .filter((mail) => mail.template === 'webhook_disabled')
        .map((mail) => [mail.to_address, mail.subject]),
      [[invitation?.email, `Webhook deliveries to 127.0.0.1:${hooks.receiver.port} were stopped`]],
      'the owner is told once',
    );
  });

  it('disables a subscription failing for the whole schedule and emails the owner (real SMTP)', async (t) => {
    const smtp = await startTestSmtpServer();
    t.after(() => smtp.close());
    const { hooks, hook } = await failingHook(t, { mailTransport: createSmtpTransport(smtp.url) });
    hooks.receiver.answer(() => ({ status: 502, body: 'bad gateway' }));
    await hooks.api.call('POST', '/tasks', { json: { title: 'Never arrives' } });
    await hooks.deliver();
    let delivery = await onlyDelivery(hooks, hook.id);
    while (delivery.next_attempt_at !== null) delivery = await runNextAttempt(hooks, hook.id);
    assert.deepEqual([delivery.status, delivery.attempt_count], ['failed', MAX_DELIVERY_ATTEMPTS]);
    const subscription = (await hooks.api.call('GET', `/hooks/${hook.id}`)).body;
    assert.deepEqual([subscription.status, subscription.disabled_reason], ['disabled', 'failing']);
    assert.equal(subscription.failing_since, delivery.attempts[0]?.started_at);

    await smtp.waitFor(2);
    const [invitation, notice] = smtp.received;
    assert.match(notice?.subject ?? '', /^Webhook deliveries to 127\.0\.0\.1:\d+ were stopped$/);
    assert.equal(
      notice?.to && 'text' in notice.to ? notice.to.text : '',
      invitation?.to && 'text' in invitation.to ? invitation.to.text : '?',
    );
    assert.match(notice?.text ?? '', new RegExp(`subscription ${hook.id}\\) because every attempt`));
    assert.match(notice?.text ?? '', /HTTP 502/);
    assert.match(
      notice?.text ?? '',
      /PATCH http:\/\/svc\.test\/api\/v1\/hooks\/hook_\w+ with \{"status": "enabled"\}/,
    );

    // Re-enabled, it starts afresh: the failing state is cleared and new events go out again.
    hooks.receiver.answer(() => ({ status: 204 }));
    const enabled = await hooks.api.call('PATCH', `/hooks/${hook.id}`, { json: { status: 'enabled' } });
    assert.deepEqual(
      [enabled.body.status, enabled.body.disabled_reason, enabled.body.failing_since],
      ['enabled', null, null],
    );
    await hooks.api.call('POST', '/tasks', { json: { title: 'Back' } });
    await hooks.deliver();
    assert.equal(JSON.parse(hooks.receiver.requests.at(-1)?.body ?? '{}').data.title, 'Back');
  });

  it('keeps a subscription enabled when another delivery succeeded while one ran out of attempts', async (t) => {
    const { hooks } = await failingHook(t);
    const hook = await hooks.subscribe(['task.created', 'person.created']);
    hooks.receiver.answer((request) =>
      JSON.parse(request.body).type === 'person.created' ? { status: 200 } : { status: 500 },
    );
    await hooks.api.call('POST', '/tasks', { json: { title: 'Always rejected' } });
    await hooks.deliver();
    // A success before the first retry (due after 4 s at the earliest), alone in its drain.
    hooks.api.runtime.clock.advance(1000);
    await hooks.api.call('POST', '/people', { json: { email: 'fine@example.com' } });
    await hooks.deliver();
    const taskDelivery = async () =>
      (await hooks.api.call('GET', `/hooks/${hook.id}/deliveries?status=pending`)).body.data[0] as
        | Delivery
        | undefined;
    for (let pending = await taskDelivery(); pending; pending = await taskDelivery()) {
      hooks.api.runtime.clock.set(new Date(at(pending.next_attempt_at)));
      await hooks.deliver();
    }
    const subscription = (await hooks.api.call('GET', `/hooks/${hook.id}`)).body;
    assert.equal(subscription.status, 'enabled');
    assert.ok(
      subscription.failing_since > subscription.last_success_at,
      'failing again since, but not throughout',
    );
    const failed = (await hooks.api.call('GET', `/hooks/${hook.id}/deliveries?status=failed`)).body.data;
    assert.equal(failed[0]?.attempt_count, MAX_DELIVERY_ATTEMPTS);
  });

  it('cancels pending retries once the subscription is disabled', async (t) => {
    const { hooks, hook } = await failingHook(t);
    hooks.receiver.answer(() => ({ status: 500 }));
    await hooks.api.call('POST', '/tasks', { json: { title: 'Pending' } });
    await hooks.deliver();
    await hooks.api.call('PATCH', `/hooks/${hook.id}`, { json: { status: 'disabled' } });
    hooks.api.runtime.clock.advance(DAY_MS);
    await hooks.deliver();
    const delivery = await onlyDelivery(hooks, hook.id);
    assert.deepEqual([delivery.status, delivery.attempt_count], ['cancelled', 1]);
    assert.equal(hooks.receiver.requests.length, 1);
  });
});
