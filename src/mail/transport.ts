import nodemailer from 'nodemailer';
import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';

export interface OutgoingMail {
  from: string;
  to: string;
  subject: string;
  text: string;
  html: string;
}

/** Where the mail worker hands a message; throws when the message was not accepted. */
export interface MailTransport {
  readonly kind: 'smtp' | 'dev-mailbox';
  send(mail: OutgoingMail): Promise<{ messageId: string }>;
  close(): void;
}

export function createSmtpTransport(smtpUrl: string): MailTransport {
  const transporter = nodemailer.createTransport(smtpUrl);
  return {
    kind: 'smtp',
    async send(mail) {
      const info = await transporter.sendMail(mail);
      if (info.rejected.length > 0)
        throw new Error(`SMTP server rejected ${info.rejected.length} recipient(s)`);
      return { messageId: info.messageId };
    },
    close: () => transporter.close(),
  };
}

/** Development only: keeps messages in the database and shows them at /dev/mailbox. */
export function createDevMailboxTransport(db: Db, clock: Clock): MailTransport {
  return {
    kind: 'dev-mailbox',
    async send(mail) {
      const id = newId('devmail', clock.now());
      await db
        .insertInto('dev_mailbox')
        .values({
          id,
          from_address: mail.from,
          to_address: mail.to,
          subject: mail.subject,
          text_body: mail.text,
          html_body: mail.html,
          received_at: clock.now().getTime(),
        })
        .execute();
      return { messageId: id };
    },
    close: () => {},
  };
}

export async function listDevMailbox(db: Db, limit = 50) {
  return db
    .selectFrom('dev_mailbox')
    .selectAll()
    .orderBy('received_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}
