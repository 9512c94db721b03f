import type { FastifyReply, FastifyRequest } from 'fastify';

/** The value of one cookie of the request; undefined when absent. */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator < 0) continue;
    if (part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

export interface CookieOptions {
  secure: boolean;
  /** Seconds; absent for a cookie that ends with the browser session. */
  maxAge?: number;
}

/**
 * Sets a cookie for the whole site: HttpOnly (no script reads it), SameSite=Lax (not sent with
 * cross-site POSTs), Secure outside local development. Values are base64url, so need no quoting.
 */
export function setCookie(reply: FastifyReply, name: string, value: string, options: CookieOptions): void {
  const attributes = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) attributes.push('Secure');
  if (options.maxAge !== undefined) attributes.push(`Max-Age=${options.maxAge}`);
  appendSetCookie(reply, attributes.join('; '));
}

export function clearCookie(reply: FastifyReply, name: string, options: { secure: boolean }): void {
  setCookie(reply, name, '', { ...options, maxAge: 0 });
}

function appendSetCookie(reply: FastifyReply, cookie: string): void {
  const existing = reply.getHeader('set-cookie');
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [String(existing)];
  reply.header('set-cookie', [...list, cookie]);
}
