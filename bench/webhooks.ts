import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { inTransaction } from '../src/db/transaction.ts';
import { publishEvent } from '../src/webhooks/index.ts';
import { organizationWithKey } from './api-read.ts';
import { onBothDialects } from './purchase-harness.ts';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2000);
const PUBLISH_BATCH = 500;

/**
 * Webhook deliveries per second to a receiver on loopback: events are published (the outbox,
 * one delivery each), then the job runner works them off, each a signed POST with its attempt
 * recorded. Loopback targets need the development setting, so the service runs as `test`.
 */
export async function benchWebhooks(): Promise<void> {
  await onBothDialects(
    'webhooks',
    async (service) => {
      let received = 0;
      const receiver = createServer((request, response) => {
        request.resume();
        request.on('end', () => {
          received++;
          response.writeHead(204).end();
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      try {
        const { workspaceId, key } = await organizationWithKey(service);
        const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
        const subscribed = await fetch(`${service.url}/api/v1/hooks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ url, event_types: ['task.created'] }),
        });
        if (subscribed.status !== 201) throw new Error(`subscribing answered ${subscribed.status}`);
        const { db } = service.runtime.database;
        const clock = service.runtime.clock;
        await service.runtime.jobs.drain(); // the owner's invitation email, so only deliveries are timed
        for (let i = 0; i < DELIVERIES; i += PUBLISH_BATCH) {
          await inTransaction(db, async (trx) => {
            for (let j = i; j < Math.min(DELIVERIES, i + PUBLISH_BATCH); j++) {
              await publishEvent(trx, clock, {
                workspaceId,
                type: 'task.created',
                data: { title: `Task ${j}` },
              });
            }
          });
        }
        const started = performance.now();
        await service.runtime.jobs.drain();
        const seconds = (performance.now() - started) / 1000;
        const durations = (await db.selectFrom('webhook_attempts').select('duration_ms').execute())
          .map((attempt) => attempt.duration_ms)
          .sort((a, b) => a - b);
        const percentile = (p: number) =>
          durations[Math.min(durations.length - 1, Math.floor(durations.length * p))];
        return {
          deliveries: DELIVERIES,
          received,
          seconds: Math.round(seconds * 100) / 100,
          deliveriesPerSecond: Math.round(received / seconds),
          attemptP50Ms: percentile(0.5),
          attemptP99Ms: percentile(0.99),
        };
      } finally {
        await new Promise((resolve) => receiver.close(resolve));
      }
    },
    { NODE_ENV: 'test', WEBHOOK_ALLOW_LOOPBACK: 'true' },
  );
}
