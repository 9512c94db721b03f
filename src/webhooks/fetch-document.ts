import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { err, ok, type Result } from '../shared/result.ts';
import { checkTarget, type TargetPolicy } from './target.ts';

export interface FetchedDocument {
  status: number;
  contentType: string;
  body: string;
}

export interface DocumentRefusal {
  code: 'target_refused' | 'fetch_failed' | 'too_large';
  message: string;
}

/**
 * GETs a document another party publishes (an OAuth client's metadata document) under the same
 * outbound rules as webhook deliveries: the URL is checked with `checkTarget` (public addresses
 * only, loopback only in development) and the socket connects to the checked addresses only; no
 * redirects are followed, at most `maxBytes` are read and the whole exchange is cut at `timeoutMs`.
 */
export async function fetchPublicDocument(
  raw: string,
  policy: TargetPolicy,
  limits: { maxBytes: number; timeoutMs: number },
): Promise<Result<FetchedDocument, DocumentRefusal>> {
  const checked = await checkTarget(raw, policy);
  if (!checked.ok) return err({ code: 'target_refused', message: `${raw} ${checked.error.message}` });
  const { url, addresses } = checked.value;
  const all = addresses.map((address) => ({ address, family: isIP(address) }));
  const lookup: LookupFunction = (_hostname, options, callback) => {
    const [first] = all;
    if (options.all) callback(null, all);
    else if (first) callback(null, first.address, first.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (result: Result<FetchedDocument, DocumentRefusal>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    const outgoing = client.get(
      url,
      { headers: { accept: 'application/json' }, lookup, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > limits.maxBytes) {
            response.destroy();
            settle(err({ code: 'too_large', message: `${raw} is larger than ${limits.maxBytes} bytes` }));
            return;
          }
          chunks.push(chunk);
        });
        response.on('end', () =>
          settle(
            ok({
              status: response.statusCode ?? 0,
              contentType: String(response.headers['content-type'] ?? ''),
              body: Buffer.concat(chunks).toString('utf8'),
            }),
          ),
        );
        response.on('error', (error) => settle(err({ code: 'fetch_failed', message: error.message })));
      },
    );
    outgoing.on('error', (error) => settle(err({ code: 'fetch_failed', message: error.message })));
    const timer = setTimeout(
      () => outgoing.destroy(new Error(`no complete answer within ${limits.timeoutMs} ms`)),
      limits.timeoutMs,
    );
  });
}
