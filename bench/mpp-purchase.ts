import { MPP_PREFIX } from '../src/channels/mpp/index.ts';
import { CONCURRENCY, measurePurchases, onBothDialects, PURCHASES } from './purchase-harness.ts';

/** The credential an agent sends back: the challenge's parameters echoed, plus the token. */
function credentialFor(wwwAuthenticate: string, spt: string): string {
  const challenge: Record<string, string> = {};
  for (const [, name, value] of wwwAuthenticate.matchAll(/(\w+)="([^"]*)"/g)) {
    if (name !== undefined && value !== undefined) challenge[name] = value;
  }
  return `Payment ${Buffer.from(JSON.stringify({ challenge, payload: { spt } })).toString('base64url')}`;
}

/** An agent's whole MPP purchase over HTTP: the unpaid request (402), then the paid retry (200). */
export function benchMppPurchase(): Promise<void> {
  return onBothDialects('mpp-purchase', async ({ url, mintTokens }) => {
    const tokens = await mintTokens(PURCHASES, 29900);
    const endpoint = `${url}${MPP_PREFIX}/plans/svc-pro-monthly`;
    return measurePurchases(PURCHASES, CONCURRENCY, async (i) => {
      const body = JSON.stringify({ buyer: { email: `buyer${i}@example.com` } });
      const headers = { 'content-type': 'application/json' };
      const challenged = await fetch(endpoint, { method: 'POST', headers, body });
      await challenged.arrayBuffer();
      const authorization = credentialFor(challenged.headers.get('www-authenticate') ?? '', tokens[i] ?? '');
      const paid = await fetch(endpoint, { method: 'POST', headers: { ...headers, authorization }, body });
      await paid.arrayBuffer();
      return challenged.status === 402 && paid.status === 200;
    });
  });
}
