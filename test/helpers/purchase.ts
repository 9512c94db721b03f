import type { TestContext } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createSmtpTransport } from '../../src/mail/index.ts';
import { createStripeAdapter } from '../../src/psp/index.ts';
import { type RunningPspSandbox, startPspSandbox } from '../../src/psp/sandbox/main.ts';
import {
  type FailpointName,
  type Failpoints,
  type PurchaseRequest,
  SimulatedCrash,
} from '../../src/purchase/index.ts';
import { createRuntime, type Runtime } from '../../src/runtime.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import type { TestDatabase } from './database.ts';
import { capturedLogger } from './logs.ts';
import { startTestRuntime, type TestRuntime } from './runtime.ts';
import { startTestSmtpServer, type TestSmtpServer } from './smtp.ts';

export const SANDBOX_KEY = 'sk_test_purchase_suite';
export const API_VERSION = '2026-07-29.preview';
/** The secret the sandbox signs its events with and the service verifies them with. */
export const WEBHOOK_SECRET = 'whsec_purchase_suite';

export interface PurchaseFixture {
  runtime: TestRuntime;
  sandbox: RunningPspSandbox;
  smtp: TestSmtpServer;
  clock: ManualClock;
  /** Every log line the service wrote at trace level, when started with `captureLogs`. */
  logs: string[];
  mintToken(options?: MintOptions): Promise<string>;
  /** Runs the job queue (invitation emails) and waits until the SMTP peer has `count` messages. */
  deliverMail(): Promise<void>;
  /** Another instance of the service on the same database, sandbox, SMTP peer and clock. */
  startSecondInstance(): Promise<Runtime>;
  counts(): Promise<{
    paymentIntents: number;
    succeeded: number;
    orders: number;
    workspaces: number;
    emails: number;
  }>;
}

export interface MintOptions {
  paymentMethod?: string;
  maxAmount?: number;
  currency?: string;
  expiresInSeconds?: number;
}

/**
 * A service on a fresh database wired to the PSP sandbox (through the real SDK over HTTP) and to a
 * real SMTP peer; sandbox and service share one manual clock.
 */
export async function startPurchaseFixture(
  t: TestContext,
  options: {
    failpoints?: Failpoints;
    maxNetworkRetries?: number;
    captureLogs?: boolean;
    /** A database of the test's own (e.g. a shared one a child process opens too). */
    database?: TestDatabase;
    /** Configuration on top of the test defaults (e.g. a BASE_URL a browser can reach). */
    env?: Record<string, string>;
    /** The sandbox sends its signed events to the service's `/psp/events` at this BASE_URL. */
    pspEventsTo?: string;
  } = {},
): Promise<PurchaseFixture> {
  const captured = options.captureLogs ? capturedLogger('trace') : undefined;
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  const sandbox = await startPspSandbox({
    secretKey: SANDBOX_KEY,
    now: () => clock.now(),
    ...(options.pspEventsTo
      ? {
          webhookEndpoint: { url: `${options.pspEventsTo}/psp/events`, secret: WEBHOOK_SECRET },
          eventRetryDelaysMs: [50, 100, 200],
        }
      : {}),
  });
  t.after(() => sandbox.close());
  const smtp = await startTestSmtpServer();
  t.after(() => smtp.close());
  const runtime = await startTestRuntime(t, {
    env: options.env,
    clock,
    mailTransport: createSmtpTransport(smtp.url),
    paymentProvider: createStripeAdapter({
      secretKey: SANDBOX_KEY,
      webhookSecret: WEBHOOK_SECRET,
      apiBase: new URL(sandbox.url),
      apiVersion: API_VERSION,
      maxNetworkRetries: options.maxNetworkRetries ?? 2,
    }),
    failpoints: options.failpoints,
    database: options.database,
    logger: captured?.logger,
  });

  return {
    logs: captured?.lines ?? [],
    runtime,
    sandbox,
    smtp,
    clock,
    mintToken: (mint = {}) => mintToken(sandbox.url, clock, mint),
    async startSecondInstance() {
      const database = runtime.database.reopen();
      const second = await createRuntime(loadConfig({ NODE_ENV: 'test', BASE_URL: 'http://svc.test' }), {
        clock,
        database,
        mailTransport: createSmtpTransport(smtp.url),
        paymentProvider: createStripeAdapter({
          secretKey: SANDBOX_KEY,
          webhookSecret: WEBHOOK_SECRET,
          apiBase: new URL(sandbox.url),
          apiVersion: API_VERSION,
        }),
      });
      t.after(async () => {
        await second.close();
        await database.close();
      });
      return second;
    },
    async deliverMail() {
      await runtime.jobs.drain();
    },
    async counts() {
      const db = runtime.database.db;
      const count = async (table: 'orders' | 'workspaces') =>
        Number(
          (
            await db
              .selectFrom(table)
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      const intents = sandbox.state.listPaymentIntents();
      return {
        paymentIntents: intents.length,
        succeeded: intents.filter((pi) => pi.status === 'succeeded').length,
        orders: await count('orders'),
        workspaces: await count('workspaces'),
        emails: smtp.received.length,
      };
    },
  };
}

export async function mintToken(
  sandboxUrl: string,
  clock: ManualClock,
  options: MintOptions = {},
): Promise<string> {
  const form = new URLSearchParams({
    payment_method: options.paymentMethod ?? 'pm_card_visa',
    'usage_limits[currency]': options.currency ?? 'usd',
    'usage_limits[max_amount]': String(options.maxAmount ?? 1_999_000),
    'usage_limits[expires_at]': String(
      Math.floor(clock.now().getTime() / 1000) + (options.expiresInSeconds ?? 3600),
    ),
  });
  const response = await fetch(`${sandboxUrl}/v1/test_helpers/shared_payment/granted_tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${SANDBOX_KEY}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: form,
  });
  const body = (await response.json()) as { id: string };
  if (response.status !== 200) throw new Error(`minting failed: ${JSON.stringify(body)}`);
  return body.id;
}

/**
 * The first request to reach `name` stops there as if its process had died: it answers nothing and
 * writes nothing more. `kill()` ends it (with SimulatedCrash) so the test can finish.
 */
export function freezeOnceAt(name: FailpointName) {
  let reached!: () => void;
  let kill!: () => void;
  const dead = new Promise<void>((resolve) => (kill = resolve));
  let armed = true;
  const failpoints: Failpoints = {
    async hit(at) {
      if (!armed || at !== name) return;
      armed = false;
      reached();
      await dead;
      throw new SimulatedCrash(name);
    },
  };
  return { failpoints, reached: new Promise<void>((resolve) => (reached = resolve)), kill };
}

let attemptCounter = 0;

export function purchaseRequest(token: string, overrides: Partial<PurchaseRequest> = {}): PurchaseRequest {
  attemptCounter++;
  return {
    attemptKey: `test:attempt-${attemptCounter}`,
    channel: 'mpp',
    itemId: 'svc-pro-monthly',
    buyer: { email: 'buyer@example.com' },
    token,
    ...overrides,
  };
}
