import type { TestContext } from 'node:test';
import { type Config, loadConfig } from '../../src/config.ts';
import type { MailTransport } from '../../src/mail/index.ts';
import type { PaymentProvider } from '../../src/psp/index.ts';
import type { Failpoints } from '../../src/purchase/index.ts';
import { createRuntime, type Runtime, type RuntimeOptions } from '../../src/runtime.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { testRedisEnv } from './redis.ts';

export interface TestRuntime extends Runtime {
  clock: ManualClock;
  database: TestDatabase;
}

/**
 * A whole service on a fresh test database with a manual clock, closed when the test ends; with
 * TEST_REDIS_URL set its rate limits count in that Redis (under a key prefix of its own).
 */
export async function startTestRuntime(
  t: TestContext,
  options: {
    env?: Record<string, string>;
    mailTransport?: MailTransport;
    clock?: ManualClock;
    paymentProvider?: PaymentProvider;
    failpoints?: Failpoints;
    database?: TestDatabase;
    logger?: RuntimeOptions['logger'];
    webhooks?: RuntimeOptions['webhooks'];
    evidenceFailpoints?: RuntimeOptions['evidenceFailpoints'];
    wrapEvidenceStore?: RuntimeOptions['wrapEvidenceStore'];
    auditDocuments?: RuntimeOptions['auditDocuments'];
  } = {},
): Promise<TestRuntime> {
  const config: Config = loadConfig({
    NODE_ENV: 'test',
    BASE_URL: 'http://svc.test',
    ...testRedisEnv(),
    ...options.env,
  });
  const ownsDatabase = options.database === undefined;
  const database = options.database ?? (await createTestDatabase());
  const clock = options.clock ?? new ManualClock('2026-03-01T12:00:00.000Z');
  const runtime = await createRuntime(config, {
    clock,
    database,
    mailTransport: options.mailTransport,
    paymentProvider: options.paymentProvider,
    failpoints: options.failpoints,
    logger: options.logger,
    webhooks: options.webhooks,
    evidenceFailpoints: options.evidenceFailpoints,
    wrapEvidenceStore: options.wrapEvidenceStore,
    auditDocuments: options.auditDocuments,
  });
  t.after(async () => {
    await runtime.close();
    if (ownsDatabase) await database.close();
  });
  return { ...runtime, clock, database };
}
