import type { FastifyReply } from 'fastify';

/** Downloads never render in a browser: attachment, no sniffing, and a sandbox if opened anyway. */
export const DOWNLOAD_HEADERS = {
  'content-security-policy': "default-src 'none'; sandbox; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'private, no-store',
};

/** `attachment` with an ASCII fallback name and the exact name in RFC 8187 encoding. */
export function attachment(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const exact = encodeURIComponent(name).replace(
    /['()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${exact}`;
}

/** Sends bytes held in memory as a download named `name`. */
export function sendDownload(reply: FastifyReply, name: string, type: string, bytes: Buffer): FastifyReply {
  return reply
    .headers(DOWNLOAD_HEADERS)
    .header('content-type', type)
    .header('content-length', bytes.length)
    .header('content-disposition', attachment(name))
    .send(bytes);
}
