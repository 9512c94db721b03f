import { randomUUID } from 'node:crypto';
import { CONCURRENCY, measurePurchases, onBothDialects, PURCHASES } from './purchase-harness.ts';

/** An agent's whole ACP purchase over HTTP: create a session, then complete it with a token. */
export function benchAcpPurchase(): Promise<void> {
  return onBothDialects('acp-purchase', async ({ url, mintTokens }) => {
    const tokens = await mintTokens(PURCHASES, 29900);
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
    return measurePurchases(PURCHASES, CONCURRENCY, async (i) => {
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
          instrument: { type: 'card', credential: { type: 'spt', token: tokens[i] } },
        },
      });
      return completed.status === 200 && completed.body.status === 'completed';
    });
  });
}
