import type { Db, Tx } from '../db/schema.ts';
import { enqueueJob, type JobDefinition } from '../jobs/index.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import type { RenderedMail } from './templates.ts';
import type { MailTransport } from './transport.ts';

export const SEND_MAIL_JOB = 'mail.send';

/** Queues an email inside the caller's transaction: it is sent if and only if the change commits. */
export async function queueMail(trx: Tx, clock: Clock, to: string, mail: RenderedMail): Promise<string> {
  const now = clock.now();
  const id = newId('mail', now);
  await trx
    .insertInto('mail_messages')
    .values({
      id,
      template: mail.template,
      to_address: to,
      subject: mail.subject,
      text_body: mail.text,
      html_body: mail.html,
      status: 'queued',
      last_error: null,
      transport_message_id: null,
      created_at: now.getTime(),
      sent_at: null,
    })
    .execute();
  await enqueueJob(trx, now, {
    kind: SEND_MAIL_JOB,
    payload: { messageId: id },
    maxAttempts: 12,
    dedupeKey: `mail:${id}`,
  });
  return id;
}

/**
 * Delivers one queued message. Delivery is at least once: a crash after the SMTP server accepted
 * the message but before it is marked sent resends it on the next attempt.
 */
export function sendMailJob(deps: {
  db: Db;
  clock: Clock;
  transport: MailTransport;
  from: string;
}): JobDefinition {
  return {
    async run(payload) {
      const { messageId } = payload as { messageId: string };
      const message = await deps.db
        .selectFrom('mail_messages')
        .selectAll()
        .where('id', '=', messageId)
        .executeTakeFirst();
      if (!message || message.status === 'sent') return;
      if (message.text_body === null || message.html_body === null)
        throw new Error(`mail ${messageId} has no body`);
      try {
        const { messageId: transportMessageId } = await deps.transport.send({
          from: deps.from,
          to: message.to_address,
          subject: message.subject,
          text: message.text_body,
          html: message.html_body,
        });
        await deps.db
          .updateTable('mail_messages')
          .set({
            status: 'sent',
            sent_at: deps.clock.now().getTime(),
            transport_message_id: transportMessageId,
            text_body: null,
            html_body: null,
            last_error: null,
          })
          .where('id', '=', messageId)
          .execute();
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        await deps.db
          .updateTable('mail_messages')
          .set({ last_error: reason.slice(0, 2000) })
          .where('id', '=', messageId)
          .execute();
        throw error;
      }
    },
    async onParked(payload) {
      const { messageId } = payload as { messageId: string };
      await deps.db
        .updateTable('mail_messages')
        .set({ status: 'failed' })
        .where('id', '=', messageId)
        .execute();
    },
  };
}
