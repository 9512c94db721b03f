// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inTransaction } from '../../src/db/transaction.ts';
import { createSmtpTransport, queueMail, renderOwnerInvitation } from '../../src/mail/index.ts';
import { testDialect } from '../helpers/database.ts';
import { startTestRuntime } from '../helpers/runtime.ts';
import { startTestSmtpServer } from '../helpers/smtp.ts';

const invitation = renderOwnerInvitation({
  workspaceName: 'Acme <Security>',
  planName: 'Pro',
  termEndsAt: new Date('2026-04-01T12:00:00Z'),
  acceptUrl: 'http://svc.test/invitations/inv_abc',
  expiresAt: new Date('2026-03-08T12:00:00Z'),
});

describe(`mail outbox on ${testDialect}`, () => {
  it('sends nothing when the transaction that queued the email rolls back', async (t) => {
    const smtp = await startTestSmtpServer();
    t.after(() => smtp.close());
    const runtime = await startTestRuntime(t, { mailTransport: createSmtpTransport(smtp.url) });
    await assert.rejects(
      inTransaction(runtime.database.db, async (trx) => {
        await queueMail(trx, runtime.clock, 'owner@example.com', invitation);
        throw new Error('the change failed');
      }),
      /the change failed/,
    );
    assert.equal(await runtime.jobs.drain(), 0);
    assert.equal((await runtime.database.db.selectFrom('mail_messages').selectAll().execute()).length, 0);
    assert.equal(smtp.received.length, 0);
  });

  it('delivers a committed email through a real SMTP peer with text and HTML parts', async (t) => {
    const smtp = await startTestSmtpServer();
    t.after(() => smtp.close());
    const runtime = await startTestRuntime(t, { mailTransport: createSmtpTransport(smtp.url) });
    const id = await inTransaction(runtime.database.db, (trx) =>
      queueMail(trx, runtime.clock, 'owner@example.com', invitation),
    );
    await runtime.jobs.drain();
    const [mail] = await smtp.waitFor(1);
    assert.ok(mail);
    assert.equal(mail.subject, 'Your Pro compliance workspace is ready');
    assert.equal((mail.to as { text: string }).text, 'owner@example.com');
    assert.match(mail.text ?? '', /http:\/\/svc\.test\/invitations\/inv_abc/);
    assert.match(String(mail.html), /href="http:\/\/svc\.test\/invitations\/inv_abc"/);
    assert.match(String(mail.html), /Acme &lt;Security&gt;/, 'HTML is escaped');
    const row = await runtime.database.db
      .selectFrom('mail_messages')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(row.status, 'sent');
    assert.equal(row.text_body, null, 'the body (it carries the invitation token) is erased once sent');
  });

  it('retries when the SMTP peer refuses once, and delivers exactly one copy', async (t) => {
    const smtp = await startTestSmtpServer();
    t.after(() => smtp.close());
    const runtime = await startTestRuntime(t, { mailTransport: createSmtpTransport(smtp.url) });
    smtp.refuseNext(1);
    const id = await inTransaction(runtime.database.db, (trx) =>
      queueMail(trx, runtime.clock, 'owner@example.com', invitation),
    );
    await runtime.jobs.drain();
    assert.equal(smtp.received.length, 0);
    const failed = await runtime.database.db
      .selectFrom('mail_messages')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(failed.status, 'queued');
    assert.match(failed.last_error ?? '', /451|busy/i);

    runtime.clock.advance(60_000);
    await runtime.jobs.drain();
    await smtp.waitFor(1);
    runtime.clock.advance(3_600_000);
    await runtime.jobs.drain();
    assert.equal(smtp.received.length, 1);
  });

  it('keeps messages in the dev mailbox when no SMTP server is configured', async (t) => {
    const runtime = await startTestRuntime(t);
    await inTransaction(runtime.database.db, (trx) =>
      queueMail(trx, runtime.clock, 'owner@example.com', invitation),
    );
    await runtime.jobs.drain();
    const page = await runtime.app.inject({ method: 'GET', url: '/dev/mailbox' });
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /Your Pro compliance workspace is ready/);
    assert.match(page.body, /Acme &lt;Security&gt;/);
    assert.match(
      page.body,
      /<a href="http:\/\/svc\.test\/invitations\/inv_abc">http:\/\/svc\.test\/invitations\/inv_abc<\/a>/,
      'links open with a click',
    );
    const json = (await runtime.app.inject({ method: 'GET', url: '/dev/mailbox.json' })).json();
    assert.equal(json.data[0].to, 'owner@example.com');
  });

  it('hides the dev mailbox in production', async (t) => {
    const runtime = await startTestRuntime(t, {
      env: {
        NODE_ENV: 'production',
        PSP_SECRET_KEY: 'sk_test_x',
        SMTP_URL: 'smtp://mail.invalid:587',
        MPP_SECRET: 'an-mpp-secret-of-at-least-32-bytes!',
        ORDER_LINK_SECRET: 'an-order-link-secret-of-32-bytes-or-more',
        PSP_WEBHOOK_SECRET: 'whsec_outbox',
      },
      // Even if a dev-mailbox transport were wired in, production does not serve its pages.
      mailTransport: { kind: 'dev-mailbox', send: async () => ({ messageId: 'unused' }), close() {} },
    });
    assert.equal((await runtime.app.inject({ method: 'GET', url: '/dev/mailbox' })).statusCode, 404);
  });
});
