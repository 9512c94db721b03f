import { CONCURRENCY, clientPurchases, onBothDialects, PURCHASES } from './purchase-harness.ts';

/** An agent's whole MPP purchase over HTTP: the unpaid request (402), then the paid retry (200). */
export function benchMppPurchase(): Promise<void> {
  return onBothDialects('mpp-purchase', async ({ url, mintTokens }) =>
    clientPurchases({
      kind: 'mpp',
      url,
      tokens: await mintTokens(PURCHASES, 29900),
      concurrency: CONCURRENCY,
    }),
  );
}
