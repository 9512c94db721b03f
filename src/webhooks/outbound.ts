import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Target } from './target.ts';

/** At most this much of an answer is read; the rest is dropped with the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** At most this much of an answer is kept with the attempt. */
export const EXCERPT_BYTES = 1024;

export interface OutboundRequest {
  target: Target;
  headers: Record<string, string>;
  body: string;
  /** For connecting, sending and reading the answer, all together. */
  timeoutMs: number;
}

/** What one POST came to. Receiver failures are values here; nothing in this module throws for them. */
export interface OutboundResult {
  /** Null when no HTTP answer arrived (connection refused, timeout, refused target). */
  statusCode: number | null;
  error: string | null;
  excerpt: string | null;
  retryAfter: string | null;
  durationMs: number;
}

/**
 * A lookup that answers the already checked addresses whatever the name, so the socket connects
 * exactly where the policy looked (no second resolution an attacker could rebind). Given them all,
 * Node tries each in turn (happy eyeballs) when one does not accept the connection.
 */
function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const all = addresses.map((address) => ({ address, family: isIP(address) }));
  return (_hostname, options, callback) => {
    const [first] = all;
    if (options.all) callback(null, all);
    else if (first) callback(null, first.address, first.family);
    else callback(new Error('no checked address to connect to'), '', 0);
  };
}

function describeFailure(error: Error): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
}

/**
 * POSTs `body` to the target's checked addresses (the first that accepts the connection). Redirects
 * are not followed (a 3xx is the answer), the answer is read up to MAX_RESPONSE_BYTES, and the whole
 * exchange is cut at the timeout.
 */
export function postPinned(request: OutboundRequest): Promise<OutboundResult> {
  const { target, headers, body, timeoutMs } = request;
  const client = target.url.protocol === 'https:' ? https : http;
  const started = performance.now();
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: Omit<OutboundResult, 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...result, durationMs: Math.round(performance.now() - started) });
    };
    const outgoing = client.request(
      target.url,
      {
        method: 'POST',
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinnedLookup(target.addresses),
        agent: false,
      },
      (response) => readAnswer(response, (excerpt, error) => settle(answerOf(response, excerpt, error))),
    );
    outgoing.on('error', (error) =>
      settle({ statusCode: null, error: describeFailure(error), excerpt: null, retryAfter: null }),
    );
    const timer = setTimeout(
      () => outgoing.destroy(new Error(`no complete answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    outgoing.end(body);
  });
}

function readAnswer(response: IncomingMessage, done: (excerpt: string, error?: Error) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  const finish = (error?: Error) =>
    done(Buffer.concat(chunks).subarray(0, EXCERPT_BYTES).toString('utf8'), error);
  response.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= MAX_RESPONSE_BYTES) {
      response.destroy();
      finish();
    }
  });
  response.on('end', () => finish());
  response.on('error', (error) => finish(error));
  response.on('close', () => finish(new Error('connection closed before the answer ended')));
}

function answerOf(
  response: IncomingMessage,
  excerpt: string,
  readError?: Error,
): Omit<OutboundResult, 'durationMs'> {
  const statusCode = response.statusCode ?? null;
  let error: string | null = readError ? `answer cut off: ${describeFailure(readError)}` : null;
  if (statusCode !== null && statusCode >= 300 && statusCode < 400) {
    const location = response.headers.location;
    error = `redirect not followed${location ? ` (Location: ${location.slice(0, 200)})` : ''}`;
  }
  const retryAfter = response.headers['retry-after'];
  return { statusCode, error, excerpt: excerpt === '' ? null : excerpt, retryAfter: retryAfter ?? null };
}
