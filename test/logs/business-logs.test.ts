// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { purchase } from '../../src/purchase/index.ts';
import { DAY_MS, ManualClock } from '../../src/shared/clock.ts';
import { maskEmail, maskEmailsIn } from '../../src/shared/redact.ts';
import { testDialect } from '../helpers/database.ts';
import { capturedLogger } from '../helpers/logs.ts';
import { purchaseRequest, startPurchaseFixture } from '../helpers/purchase.ts';
import { startWebhookFixture } from '../webhooks/fixture.ts';

type Line = Record<string, unknown>;

/** The lines with `event` set to `name`, parsed. */
function events(lines: string[], name: string): Line[] {
  return lines.map((line) => JSON.parse(line) as Line).filter((line) => line.event === name);
}

/** No address (anything@anything.tld) appears whole; masked ones (a***@example.com) may. */
function assertNoAddressInClear(lines: string[], addresses: string[]): void {
  const all = lines.join('\n');
  for (const address of addresses) {
    assert.equal(all.toLowerCase().includes(address.toLowerCase()), false, `${address} reached the logs`);
  }
  assert.doesNotMatch(all, /[A-Za-z0-9._%+-]{2,}@[A-Za-z0-9.-]+\.[a-z]{2,}/, 'an unmasked address');
}

describe(`business log lines on ${testDialect}`, () => {
  it('say which order completed, which payment was declined, which invitation was emailed and which term ended, by id', async (t) => {
    const fixture = await startPurchaseFixture(t, { captureLogs: true });
    const buyer = { email: 'Buyer.Person@example.com' };
    const completed = await purchase(
      fixture.runtime.purchases,
      purchaseRequest(await fixture.mintToken(), { channel: 'acp', itemId: 'svc-starter-monthly', buyer }),
    );
    assert.equal(completed.kind, 'completed');
    const order = completed.kind === 'completed' ? completed.order : assert.fail();
    const declinedRequest = purchaseRequest(
      await fixture.mintToken({ paymentMethod: 'pm_card_visa_chargeDeclinedInsufficientFunds' }),
      { channel: 'ucp', buyer },
    );
    assert.equal((await purchase(fixture.runtime.purchases, declinedRequest)).kind, 'declined');

    fixture.smtp.refuseNext(1);
    await fixture.deliverMail();
    fixture.clock.advance(DAY_MS);
    await fixture.deliverMail();
    assert.equal(fixture.smtp.received.length, 1, 'the invitation went out on the second attempt');

    fixture.clock.advance(31 * DAY_MS);
    await fixture.runtime.jobs.runSweeps();

    const lines = fixture.logs;
    const [orderLine, ...moreOrders] = events(lines, 'order.completed');
    assert.equal(moreOrders.length, 0, 'one line per order');
    assert.deepEqual(
      {
        msg: orderLine?.msg,
        level: orderLine?.level,
        orderId: orderLine?.orderId,
        workspaceId: orderLine?.workspaceId,
        channel: orderLine?.channel,
        itemId: orderLine?.itemId,
        amount: orderLine?.amount,
        currency: orderLine?.currency,
        paymentIntentId: orderLine?.paymentIntentId,
      },
      {
        msg: 'order completed',
        level: 30,
        orderId: order.id,
        workspaceId: order.workspaceId,
        channel: 'acp',
        itemId: 'svc-starter-monthly',
        amount: 9900,
        currency: 'usd',
        paymentIntentId: order.paymentIntentId,
      },
    );

    const [decline] = events(lines, 'payment.declined');
    assert.equal(decline?.code, 'insufficient_funds');
    assert.equal(decline?.channel, 'ucp');
    assert.match(String(decline?.attemptId), /^pa/);
    assert.match(String(decline?.orderId), /^ord_/);
    assert.equal(decline?.amount, 29900);

    const [failedAttempt] = events(lines, 'mail.attempt_failed');
    assert.equal(failedAttempt?.template, 'owner_invitation');
    assert.equal(failedAttempt?.workspaceId, order.workspaceId);
    assert.match(String(failedAttempt?.messageId), /^mail_/);
    assert.match(
      String(failedAttempt?.reason),
      /<B\*\*\*@example\.com>/,
      'the refusal names the recipient, masked',
    );
    const [sent] = events(lines, 'mail.sent');
    assert.deepEqual(
      [sent?.msg, sent?.template, sent?.workspaceId, sent?.messageId],
      ['email sent', 'owner_invitation', order.workspaceId, failedAttempt?.messageId],
    );

    const [ended] = events(lines, 'term.ended');
    assert.deepEqual(
      [ended?.msg, ended?.workspaceId, ended?.orderId, ended?.plan, ended?.planNow],
      ['term ended', order.workspaceId, order.id, 'starter', 'free'],
    );

    assertNoAddressInClear(lines, [buyer.email]);
    assert.doesNotMatch(lines.join('\n'), /spt_|inv_[A-Za-z0-9]/, 'no payment or invitation token');
  });

  it('say which webhook endpoint is failing, attempt by attempt, and when it was disabled', async (t) => {
    const { logger, lines: logs } = capturedLogger('info');
    const clock = new ManualClock('2026-03-01T12:00:00.000Z');
    const hooks = await startWebhookFixture(t, { clock, logger });
    const { id: subscriptionId } = await hooks.subscribe(['task.created']);
    hooks.receiver.answer((_request, index) => ({ status: index === 0 ? 503 : 410 }));
    const created = await hooks.api.call('POST', '/tasks', { json: { title: 'Review access rights' } });
    assert.equal(created.status, 201);
    await hooks.deliver();
    clock.advance(60_000);
    await hooks.deliver();
    await hooks.deliver();

    const attempts = events(logs, 'webhook.attempt_failed');
    assert.deepEqual(
      attempts.map((line) => [line.level, line.subscriptionId, line.workspaceId, line.attempt, line.status]),
      [
        [40, subscriptionId, hooks.api.org.workspaceId, 1, 503],
        [40, subscriptionId, hooks.api.org.workspaceId, 2, 410],
      ],
    );
    assert.equal(typeof attempts[0]?.nextAttemptAt, 'string', 'the first failure is retried');
    assert.equal(attempts[1]?.nextAttemptAt, null);
    const [disabled] = events(logs, 'webhook.disabled');
    assert.deepEqual(
      [disabled?.msg, disabled?.subscriptionId, disabled?.workspaceId, disabled?.reason],
      ['webhook subscription disabled', subscriptionId, hooks.api.org.workspaceId, 'gone'],
    );
    const ownerTold = events(logs, 'mail.sent').filter((line) => line.template === 'webhook_disabled');
    assert.deepEqual(
      ownerTold.map((line) => line.workspaceId),
      [hooks.api.org.workspaceId],
    );

    assertNoAddressInClear(logs, []);
    assert.equal(logs.join('\n').includes(hooks.receiver.url), false, 'the endpoint URL is not logged');
  });

  it('says which invitation email was given up, with its workspace, and nothing of the address', async (t) => {
    const fixture = await startPurchaseFixture(t, { captureLogs: true });
    const outcome = await purchase(
      fixture.runtime.purchases,
      purchaseRequest(await fixture.mintToken(), { buyer: { email: 'never.reached@example.com' } }),
    );
    const order = outcome.kind === 'completed' ? outcome.order : assert.fail(JSON.stringify(outcome));
    fixture.smtp.refuseNext(100);
    for (let day = 0; day < 15 && events(fixture.logs, 'mail.failed').length === 0; day++) {
      await fixture.deliverMail();
      fixture.clock.advance(DAY_MS);
    }
    const [failed] = events(fixture.logs, 'mail.failed');
    assert.deepEqual(
      [failed?.level, failed?.msg, failed?.template, failed?.workspaceId],
      [50, 'email given up', 'owner_invitation', order.workspaceId],
    );
    assert.match(String(failed?.reason), /<n\*\*\*@example\.com> busy/);
    assert.equal(events(fixture.logs, 'mail.attempt_failed').length, 12);
    assertNoAddressInClear(fixture.logs, ['never.reached@example.com']);
  });

  it('masks addresses to their first letter and domain', () => {
    assert.equal(maskEmail('alice@example.com'), 'a***@example.com');
    assert.equal(
      maskEmailsIn('550 5.1.1 <Bob.Smith@mail.example.org>: unknown, cc carol@x.io'),
      '550 5.1.1 <B***@mail.example.org>: unknown, cc c***@x.io',
    );
  });
});
