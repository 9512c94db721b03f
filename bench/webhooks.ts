import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { inTransaction } from '../src/db/transaction.ts';
import { publishEvent } from '../src/webhooks/index.ts';
import { organizationWithKey } from './api-read.ts';
import { onBothDialects } from './purchase-harness.ts';

const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2000);
const PUBLISH_BATCH = 500;
/** The backlog of a dead and of a hanging receiver beside the healthy one (issue 17 measured 121). */
const BACKLOG = Number(process.env.BENCH_WEBHOOK_BACKLOG ?? 121);

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

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/**
 * How long an event takes to reach a healthy receiver while a dead receiver (a closed port) and
 * a hanging one (accepts, never answers) each have a backlog of `BACKLOG` deliveries: the job
 * runner runs as in production (its own polling, real clock), and the time is from publishing
 * the event to its arrival.
 */
export async function benchWebhookIsolation(): Promise<void> {
  await onBothDialects(
    'webhooks-isolation',
    async (service) => {
      let arrived: (() => void) | undefined;
      const healthy = createServer((request, response) => {
        request.resume();
        request.on('end', () => {
          response.writeHead(204).end();
          arrived?.();
        });
      });
      const hanging = createServer((request) => request.resume());
      const closed = createServer();
      const deadUrl = await listen(closed);
      await new Promise((resolve) => closed.close(resolve));
      try {
        const { workspaceId, key } = await organizationWithKey(service);
        const subscribe = async (url: string, type: string) => {
          const answer = await fetch(`${service.url}/api/v1/hooks`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ url, event_types: [type] }),
          });
          if (answer.status !== 201) throw new Error(`subscribing answered ${answer.status}`);
        };
        await subscribe(`${deadUrl}/dead`, 'task.created');
        await subscribe(`${await listen(hanging)}/slow`, 'task.created');
        await subscribe(`${await listen(healthy)}/hooks`, 'risk.created');
        const { db } = service.runtime.database;
        const clock = service.runtime.clock;
        await inTransaction(db, async (trx) => {
          for (let n = 0; n < BACKLOG; n++) {
            await publishEvent(trx, clock, {
              workspaceId,
              type: 'task.created',
              data: { title: `Backlog ${n}` },
            });
          }
        });
        service.runtime.jobs.start();
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const received = new Promise<void>((resolve, reject) => {
          arrived = resolve;
          setTimeout(() => reject(new Error('the healthy receiver got nothing in 60 s')), 60_000).unref();
        });
        const started = performance.now();
        await inTransaction(db, (trx) =>
          publishEvent(trx, clock, { workspaceId, type: 'risk.created', data: { title: 'Laptop theft' } }),
        );
        await received;
        const healthyDeliveryMs = Math.round(performance.now() - started);
        return { backlogPerReceiver: BACKLOG, healthyDeliveryMs };
      } finally {
        hanging.closeAllConnections();
        await service.runtime.jobs.stop();
        await Promise.all(
          [healthy, hanging].map((server) => new Promise((resolve) => server.close(resolve))),
        );
      }
    },
    { NODE_ENV: 'test', WEBHOOK_ALLOW_LOOPBACK: 'true' },
  );
}
