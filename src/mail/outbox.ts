import { insertRow, type Param, preparedQuery } from '../db/prepared.ts';
import type { Db, Tx } from '../db/schema.ts';
import { enqueueJob, type JobDefinition } from '../jobs/index.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { maskEmailsIn } from '../shared/redact.ts';
import type { RenderedMail } from './templates.ts';
import type { MailTransport } from './transport.ts';

export const SEND_MAIL_JOB = 'mail.send';

/** What the send job needs besides the message: the workspace it concerns, for the log lines. */
interface SendMailPayload {
  messageId: string;
  workspaceId?: string;
}

export interface MailLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

/**
 * Queues an email inside the caller's transaction: it is sent if and only if the change commits.
 * `about.workspaceId` names the workspace in the log lines of its sending.
 */
export async function queueMail(
  trx: Tx,
  clock: Clock,
  to: string,
  mail: RenderedMail,
  about: { workspaceId?: string } = {},
): Promise<string> {
  const now = clock.now();
  const id = newId('mail', now);
  await insertRow(trx, 'mail_messages', {
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
  });
  await enqueueJob(trx, now, {
    kind: SEND_MAIL_JOB,
    payload: { messageId: id, workspaceId: about.workspaceId } satisfies SendMailPayload,
    maxAttempts: 12,
    dedupeKey: `mail:${id}`,
  });
  return id;
}

export interface SendMailDeps {
  db: Db;
  clock: Clock;
  transport: MailTransport;
  from: string;
  logger: MailLogger;
}

const messageById = preparedQuery((db, param: Param<{ id: string }>) =>
  db.selectFrom('mail_messages').selectAll().where('id', '=', param('id')),
);

/** A sent message keeps no body: only the fact, the time and the transport's id. */
const markSent = preparedQuery(
  (db, param: Param<{ id: string; sentAt: number; transportMessageId: string }>) =>
    db
      .updateTable('mail_messages')
      .set({
        status: 'sent',
        sent_at: param('sentAt'),
        transport_message_id: param('transportMessageId'),
        text_body: null,
        html_body: null,
        last_error: null,
      })
      .where('id', '=', param('id')),
);

/**
 * Delivers one queued message. Delivery is at least once: a crash after the SMTP server accepted
 * the message but before it is marked sent resends it on the next attempt. Log lines and the
 * error handed to the job runner carry addresses only masked; the message row keeps the reason.
 */
export function sendMailJob(deps: SendMailDeps): JobDefinition {
  return {
    async run(payload, { attempt }) {
      const { messageId, workspaceId } = payload as SendMailPayload;
      const {
        rows: [message],
      } = await messageById(deps.db, { id: messageId });
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
        await markSent(deps.db, {
          id: messageId,
          sentAt: deps.clock.now().getTime(),
          transportMessageId,
        });
        deps.logger.info(
          { event: 'mail.sent', messageId, template: message.template, workspaceId, transportMessageId },
          'email sent',
        );
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        await deps.db
          .updateTable('mail_messages')
          .set({ last_error: reason.slice(0, 2000) })
          .where('id', '=', messageId)
          .execute();
        const masked = maskEmailsIn(reason).slice(0, 500);
        deps.logger.warn(
          {
            event: 'mail.attempt_failed',
            messageId,
            template: message.template,
            workspaceId,
            attempt,
            reason: masked,
          },
          'sending an email failed; will retry',
        );
        throw new Error(masked);
      }
    },
    async onParked(payload, lastError) {
      const { messageId, workspaceId } = payload as SendMailPayload;
      const message = await deps.db
        .updateTable('mail_messages')
        .set({ status: 'failed' })
        .where('id', '=', messageId)
        .returning('template')
        .executeTakeFirst();
      deps.logger.error(
        {
          event: 'mail.failed',
          messageId,
          template: message?.template,
          workspaceId,
          reason: maskEmailsIn(lastError),
        },
        'email given up',
      );
    },
  };
}
