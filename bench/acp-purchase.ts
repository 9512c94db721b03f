import { CONCURRENCY, clientPurchases, onBothDialects, PURCHASES } from './purchase-harness.ts';

/** An agent's whole ACP purchase over HTTP: create a session, then complete it with a token. */
export function benchAcpPurchase(): Promise<void> {
  return onBothDialects('acp-purchase', async ({ url, mintTokens }) =>
    clientPurchases({
      kind: 'acp',
      url,
      tokens: await mintTokens(PURCHASES, 29900),
      concurrency: CONCURRENCY,
    }),
  );
}
