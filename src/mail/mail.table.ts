export type MailStatus = 'queued' | 'sent' | 'failed';

/** The mail outbox: a row is written in the same transaction as the change that causes the email. */
export interface MailMessagesTable {
  id: string;
  template: string;
  to_address: string;
  subject: string;
  /** Bodies are erased once delivered: an invitation email carries a secret token. */
  text_body: string | null;
  html_body: string | null;
  status: MailStatus;
  last_error: string | null;
  transport_message_id: string | null;
  created_at: number;
  sent_at: number | null;
}

/** What the development mailbox transport received (never used when SMTP is configured). */
export interface DevMailboxTable {
  id: string;
  from_address: string;
  to_address: string;
  subject: string;
  text_body: string;
  html_body: string;
  received_at: number;
}

declare module '../db/schema.ts' {
  interface Database {
    mail_messages: MailMessagesTable;
    dev_mailbox: DevMailboxTable;
  }
}
