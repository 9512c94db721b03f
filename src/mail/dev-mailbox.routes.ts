import type { FastifyInstance } from 'fastify';
import type { Db } from '../db/schema.ts';
import { escapeHtml } from '../shared/html.ts';
import { listDevMailbox } from './transport.ts';

/** Development only: the messages the dev mailbox transport received, newest first. */
export function registerDevMailboxRoutes(app: FastifyInstance, db: Db): void {
  app.get('/dev/mailbox.json', async () => {
    const messages = await listDevMailbox(db);
    return {
      data: messages.map((m) => ({
        id: m.id,
        from: m.from_address,
        to: m.to_address,
        subject: m.subject,
        text: m.text_body,
        html: m.html_body,
        received_at: new Date(m.received_at).toISOString(),
      })),
    };
  });

  app.get('/dev/mailbox', async (_request, reply) => {
    const messages = await listDevMailbox(db);
    const items = messages
      .map(
        (m) => `<article>
<h2>${escapeHtml(m.subject)}</h2>
<p><small>${escapeHtml(new Date(m.received_at).toISOString())} &middot; to ${escapeHtml(m.to_address)} &middot; from ${escapeHtml(m.from_address)}</small></p>
<pre>${linkified(m.text_body)}</pre>
</article>`,
      )
      .join('\n<hr>\n');
    reply
      .type('text/html; charset=utf-8')
      .header(
        'content-security-policy',
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      );
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dev mailbox</title>
<style>body{font-family:sans-serif;max-width:50rem;margin:2rem auto}pre{white-space:pre-wrap;background:#f4f4f4;padding:1rem}</style>
</head><body><h1>Dev mailbox</h1><p>Development only: email the service would have sent. Newest first.</p>
${items || '<p>No messages yet.</p>'}
</body></html>`;
  });
}

/** The body, escaped, with each http(s) URL a link (the way a mail client shows it). */
function linkified(text: string): string {
  return text
    .split(/(https?:\/\/[^\s<>"]*[^\s<>".,;:!?)\]])/)
    .map((part, index) => {
      if (index % 2 === 0) return escapeHtml(part);
      const url = escapeHtml(part);
      return `<a href="${url}">${url}</a>`;
    })
    .join('');
}
