import { randomBytes } from 'node:crypto';
import { purchase } from '../src/purchase/index.ts';
import { measurePurchases } from './measure.ts';
import { CONCURRENCY, onBothDialects, PURCHASES } from './purchase-harness.ts';

/** The purchase pipeline alone (record, charge via the SDK over HTTP to the sandbox, provision). */
export function benchPurchase(): Promise<void> {
  return onBothDialects('purchase', async ({ runtime, mintTokens }) => {
    const tokens = await mintTokens(PURCHASES, 29900);
    return measurePurchases(PURCHASES, CONCURRENCY, async (i) => {
      const outcome = await purchase(runtime.purchases, {
        attemptKey: `bench:${randomBytes(8).toString('hex')}`,
        channel: 'mpp',
        itemId: 'svc-pro-monthly',
        buyer: { email: `buyer${i}@example.com` },
        token: tokens[i] ?? '',
      });
      return outcome.kind === 'completed';
    });
  });
}
