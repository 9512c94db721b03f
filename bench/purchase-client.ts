import { randomUUID } from 'node:crypto';
import { measurePurchases } from './measure.ts';

/** What the parent benchmark sends on stdin. */
export interface PurchaseClientJob {
  kind: 'acp' | 'mpp';
  url: string;
  /** The MPP route's prefix (the service's MPP_PREFIX). */
  mppPrefix: string;
  tokens: string[];
  concurrency: number;
}

/**
 * An agent's purchases over HTTP, in a process of its own so that the client's CPU is not taken
 * from the service it measures; prints the measurement as one JSON line.
 */
async function main(): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const job = JSON.parse(Buffer.concat(chunks).toString('utf8')) as PurchaseClientJob;
  const purchase = job.kind === 'acp' ? acpPurchase(job.url) : mppPurchase(`${job.url}${job.mppPrefix}`);
  const result = await measurePurchases(job.tokens.length, job.concurrency, (i) =>
    purchase(i, job.tokens[i] ?? ''),
  );
  console.log(JSON.stringify(result));
}

/** Create a session, then complete it with a token. */
function acpPurchase(url: string) {
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`${url}/api/acp/checkout_sessions${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
        'api-version': '2026-04-17',
      },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as { id?: string; status?: string } };
  };
  return async (i: number, token: string) => {
    const created = await post('', {
      line_items: [{ id: 'svc-pro-monthly' }],
      currency: 'usd',
      capabilities: {},
      buyer: { email: `buyer${i}@example.com` },
    });
    if (created.status !== 201 || !created.body.id) return false;
    const completed = await post(`/${created.body.id}/complete`, {
      payment_data: {
        handler_id: 'psp_spt',
        instrument: { type: 'card', credential: { type: 'spt', token } },
      },
    });
    return completed.status === 200 && completed.body.status === 'completed';
  };
}

/** The credential an agent sends back: the challenge's parameters echoed, plus the token. */
function credentialFor(wwwAuthenticate: string, spt: string): string {
  const challenge: Record<string, string> = {};
  for (const [, name, value] of wwwAuthenticate.matchAll(/(\w+)="([^"]*)"/g)) {
    if (name !== undefined && value !== undefined) challenge[name] = value;
  }
  return `Payment ${Buffer.from(JSON.stringify({ challenge, payload: { spt } })).toString('base64url')}`;
}

/** The unpaid request (402), then the paid retry (200). */
function mppPurchase(base: string) {
  const endpoint = `${base}/plans/svc-pro-monthly`;
  return async (i: number, token: string) => {
    const body = JSON.stringify({ buyer: { email: `buyer${i}@example.com` } });
    const headers = { 'content-type': 'application/json' };
    const challenged = await fetch(endpoint, { method: 'POST', headers, body });
    await challenged.arrayBuffer();
    const authorization = credentialFor(challenged.headers.get('www-authenticate') ?? '', token);
    const paid = await fetch(endpoint, { method: 'POST', headers: { ...headers, authorization }, body });
    await paid.arrayBuffer();
    return challenged.status === 402 && paid.status === 200;
  };
}

await main();
