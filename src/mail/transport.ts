import type { Transporter } from 'nodemailer';
import type SMTPTransport from 'nodemailer/lib/smtp-transport';
import { insertRow } from '../db/prepared.ts';
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

type SmtpTransporter = Transporter<SMTPTransport.SentMessageInfo>;

/** nodemailer is loaded with the first message, not at start-up (docs/decisions.md). */
export function createSmtpTransport(smtpUrl: string): MailTransport {
  let transporter: Promise<SmtpTransporter> | undefined;
  let opened: SmtpTransporter | undefined;
  const open = () =>
    (transporter ??= import('nodemailer').then((module) => {
      opened = module.default.createTransport(smtpUrl);
      return opened;
    }));
  return {
    kind: 'smtp',
    async send(mail) {
      const info = await (await open()).sendMail(mail);
      if (info.rejected.length > 0)
        throw new Error(`SMTP server rejected ${info.rejected.length} recipient(s)`);
      return { messageId: info.messageId };
    },
    close: () => opened?.close(),
  };
}

/** Development only: keeps messages in the database and shows them at /dev/mailbox. */
export function createDevMailboxTransport(db: Db, clock: Clock): MailTransport {
  return {
    kind: 'dev-mailbox',
    async send(mail) {
      const id = newId('devmail', clock.now());
      await insertRow(db, 'dev_mailbox', {
        id,
        from_address: mail.from,
        to_address: mail.to,
        subject: mail.subject,
        text_body: mail.text,
        html_body: mail.html,
        received_at: clock.now().getTime(),
      });
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
