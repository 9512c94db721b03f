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
  /** Mint each purchase's token from this PSP sandbox inside the purchase (then `purchases` of them). */
  psp?: { url: string; secretKey: string; purchases: number };
}

/**
 * An agent's purchases over HTTP, in a process of its own so that the client's CPU is not taken
 * from the service it measures; prints the measurement as one JSON line.
 */
async function main(): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const job = JSON.parse(Buffer.concat(chunks).toString('utf8')) as PurchaseClientJob;
  const completions: number[] = [];
  const purchase =
    job.kind === 'acp' ? acpPurchase(job.url, completions) : mppPurchase(`${job.url}${job.mppPrefix}`);
  const psp = job.psp;
  const count = psp ? psp.purchases : job.tokens.length;
  const cpuBefore = process.cpuUsage();
  const result = await measurePurchases(count, job.concurrency, async (i) =>
    purchase(i, psp ? await mintToken(psp.url, psp.secretKey) : (job.tokens[i] ?? '')),
  );
  const cpu = process.cpuUsage(cpuBefore);
  completions.sort((a, b) => a - b);
  const at = (p: number) =>
    Math.round(
      (completions[Math.min(completions.length - 1, Math.floor(completions.length * p))] ?? 0) * 10,
    ) / 10;
  console.log(
    JSON.stringify({
      ...result,
      // The agents' own CPU: on a machine of few cores it is taken from the service measured.
      clientCpuMsPerPurchase: Math.round((cpu.user + cpu.system) / count / 10) / 100,
      ...(job.kind === 'acp' ? { completeP50Ms: at(0.5), completeP99Ms: at(0.99) } : {}),
    }),
  );
}

/** A shared payment token for one pro monthly purchase, as an agent gets one from the PSP. */
async function mintToken(sandboxUrl: string, secretKey: string): Promise<string> {
  const response = await fetch(`${sandboxUrl}/v1/test_helpers/shared_payment/granted_tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secretKey}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      payment_method: 'pm_card_visa',
      'usage_limits[currency]': 'usd',
      'usage_limits[max_amount]': '29900',
    }),
  });
  return ((await response.json()) as { id: string }).id;
}

/** Create a session, then complete it with a token; each complete's milliseconds go to `completions`. */
function acpPurchase(url: string, completions: number[]) {
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
    const started = performance.now();
    const completed = await post(`/${created.body.id}/complete`, {
      payment_data: {
        handler_id: 'psp_spt',
        instrument: { type: 'card', credential: { type: 'spt', token } },
      },
    });
    completions.push(performance.now() - started);
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
