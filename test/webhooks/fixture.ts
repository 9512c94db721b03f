import type { TestContext } from 'node:test';
import { Webhook } from 'standardwebhooks';
import type { MailTransport } from '../../src/mail/index.ts';
import type { RuntimeOptions } from '../../src/runtime.ts';
import type { ManualClock } from '../../src/shared/clock.ts';
import { type ApiFixture, startApiFixture } from '../helpers/api.ts';
import type { TestDatabase } from '../helpers/database.ts';
import { type ReceivedRequest, startReceiver, type TestReceiver } from './receiver.ts';

export interface WebhookFixture {
  api: ApiFixture;
  receiver: TestReceiver;
  /** What host names resolve to, for the service; anything not here does not resolve. */
  hosts: Map<string, string[]>;
  /** Subscribes the receiver (or `url`) with the fixture's first organization; returns id and secret. */
  subscribe(eventTypes?: string[], url?: string): Promise<{ id: string; secret: string }>;
  /** Runs every due job (deliveries, emails) now. */
  deliver(): Promise<number>;
}

export interface WebhookFixtureOptions {
  clock?: ManualClock;
  database?: TestDatabase;
  mailTransport?: MailTransport;
  /** Loopback targets are allowed (development setting) unless this is false. */
  allowLoopback?: boolean;
  timeoutMs?: number;
  logger?: RuntimeOptions['logger'];
}

/** A service with loopback webhook targets allowed, a receiver, and a resolver the test controls. */
export async function startWebhookFixture(
  t: TestContext,
  options: WebhookFixtureOptions = {},
): Promise<WebhookFixture> {
  const hosts = new Map<string, string[]>([['localhost', ['127.0.0.1', '::1']]]);
  const api = await startApiFixture(t, {
    env: { WEBHOOK_ALLOW_LOOPBACK: String(options.allowLoopback ?? true) },
    clock: options.clock,
    database: options.database,
    mailTransport: options.mailTransport,
    logger: options.logger,
    webhooks: {
      timeoutMs: options.timeoutMs,
      resolveHost: async (hostname) => {
        const addresses = hosts.get(hostname);
        if (!addresses) throw new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        return addresses;
      },
    },
  });
  const receiver = await startReceiver(t);
  return {
    api,
    receiver,
    hosts,
    async subscribe(eventTypes = ['*'], url = `${receiver.url}/hooks`) {
      const response = await api.call('POST', '/hooks', { json: { url, event_types: eventTypes } });
      if (response.status !== 201)
        throw new Error(`subscribe answered ${response.status}: ${JSON.stringify(response.body)}`);
      return { id: response.body.id, secret: response.body.secret };
    },
    deliver: () => api.runtime.jobs.drain(),
  };
}

/**
 * Verifies a received request with the `standardwebhooks` package, as a receiver would. The
 * package checks the timestamp against `Date.now()`, so the check runs at the attempt's own time
 * (the service runs on a manual clock); returns the parsed payload or throws.
 */
export function verifyAt(t: TestContext, secret: string, request: ReceivedRequest): unknown {
  const at = Number(request.headers['webhook-timestamp']) * 1000;
  t.mock.timers.enable({ apis: ['Date'], now: at });
  try {
    return new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
  } finally {
    t.mock.timers.reset();
  }
}
