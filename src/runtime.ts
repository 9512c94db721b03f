import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino, { type LoggerOptions } from 'pino';
import { accountsWiring } from './accounts/index.ts';
import { buildApp } from './app.ts';
import type { BillingDeps } from './billing/index.ts';
import { acpOrderNotifier } from './channels/acp/index.ts';
import { mppWiring } from './channels/mpp/index.ts';
import { ucpOrderNotifier } from './channels/ucp/index.ts';
import { type CheckoutDeps, checkoutWiring } from './checkout/index.ts';
import { complianceWiring, type EvidenceFailpoints } from './compliance/index.ts';
import type { Config } from './config.ts';
import { type DatabaseHandle, openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import { type DocumentsProvider, evidencePackageWiring, isPackageFile } from './evidence-package/index.ts';
import { createMemoryRateLimiters, type RateLimiters } from './http/rate-limit.ts';
import { idempotencyWiring } from './idempotency/index.ts';
import { instancesWiring, startInstance } from './instances/index.ts';
import { combineWiring, type JobLogger, JobRunner, jobsWiring, type ModuleWiring } from './jobs/index.ts';
import {
  createDevMailboxTransport,
  createSmtpTransport,
  type MailTransport,
  mailWiring,
} from './mail/index.ts';
import { oauthWiring } from './oauth/index.ts';
import { createStripeAdapter, type PaymentProvider } from './psp/index.ts';
import {
  createOrderLinks,
  type Failpoints,
  loadOrderLinkSecret,
  orderFollowingWiring,
  type PurchaseDeps,
  purchaseWiring,
} from './purchase/index.ts';
import { auditDocuments } from './reports/index.ts';
import { type Clock, systemClock } from './shared/clock.ts';
import { createKeyStore, type KeyStore } from './signing/index.ts';
import { createFileStore, type FileStore } from './storage/index.ts';
import {
  DELIVERY_TIMEOUT_MS,
  type ResolveHost,
  systemResolver,
  type TargetPolicy,
  webhooksWiring,
} from './webhooks/index.ts';
import { findWorkspaceOwner, knownWorkspaceIds, workspaceWiring } from './workspace/index.ts';

/**
 * Jobs running at once per instance, and of one concurrency key (one webhook receiver). Most jobs
 * wait on the network (a receiver may take its whole 10 s timeout), so a slow receiver holds at
 * most 4 of the 16 slots and three slow receivers still leave a healthy one its slots.
 */
const JOB_CONCURRENCY = 16;
const JOBS_PER_KEY = 4;

function loggerFrom(option: RuntimeOptions['logger']): FastifyBaseLogger {
  if (option === undefined) return pino({ level: 'silent' });
  return typeof (option as FastifyBaseLogger).child === 'function'
    ? (option as FastifyBaseLogger)
    : pino(option);
}

export interface Runtime {
  config: Config;
  clock: Clock;
  database: DatabaseHandle;
  mailTransport: MailTransport;
  jobs: JobRunner;
  app: FastifyInstance;
  /** What every checkout channel hands to the purchase pipeline. */
  purchases: PurchaseDeps;
  checkout: CheckoutDeps;
  /** Where evidence files live (EVIDENCE_STORAGE). */
  evidenceStore: FileStore;
  /** The keys UCP responses and webhooks are signed with. */
  signingKeys: KeyStore;
  /** Migrations applied by this start (empty when the schema was already current). */
  appliedMigrations: string[];
  close(): Promise<void>;
}

export interface RuntimeOptions {
  clock?: Clock;
  /** Pino options, a ready logger (tests capture lines), or nothing for silence. */
  logger?: LoggerOptions | FastifyBaseLogger;
  /** Tests pass an open database (e.g. an isolated PostgreSQL schema). */
  database?: DatabaseHandle;
  mailTransport?: MailTransport;
  /** Defaults to the provider's SDK pointed at the configured API (or the local sandbox). */
  paymentProvider?: PaymentProvider;
  /** Tests make the purchase pipeline "crash" at named points. */
  failpoints?: Failpoints;
  /** Tests make an evidence upload "crash" between its file and its record, or after its record. */
  evidenceFailpoints?: EvidenceFailpoints;
  /** Tests put faults between the service and its evidence store (a disk that fills up). */
  wrapEvidenceStore?: (store: FileStore) => FileStore;
  /** Tests make host names resolve where they need (the system resolver otherwise) and shorten attempts. */
  webhooks?: { resolveHost?: ResolveHost; timeoutMs?: number };
  /** Tests replace the audit documents an evidence package carries (by default the SoA and the treatment plan). */
  auditDocuments?: DocumentsProvider;
}

/** The SDK adapter for the configured provider; with no key configured, the local PSP sandbox. */
export function paymentProviderFor(config: Config, sandboxUrl?: string): PaymentProvider {
  const apiBase =
    config.psp.kind === 'remote'
      ? config.psp.apiBase
      : new URL(sandboxUrl ?? `http://127.0.0.1:${config.psp.port}`);
  return createStripeAdapter({
    secretKey: config.psp.secretKey,
    apiBase,
    apiVersion: config.psp.apiVersion,
    webhookSecret: config.psp.webhookSecret,
  });
}

/**
 * Wires the service: database (migrated), mail transport, job runner and HTTP app.
 * Nothing is listening or polling yet; `serve.ts` starts those.
 */
export async function createRuntime(config: Config, options: RuntimeOptions = {}): Promise<Runtime> {
  const clock = options.clock ?? systemClock;
  const database = options.database ?? openDatabase(config.database);
  const appliedMigrations = await migrateToLatest(database.db);
  const mailTransport =
    options.mailTransport ??
    (config.smtpUrl ? createSmtpTransport(config.smtpUrl) : createDevMailboxTransport(database.db, clock));

  const logger = loggerFrom(options.logger);
  const instance = await startInstance(database.db, config.instances);
  const orderLinkSecret = await loadOrderLinkSecret(
    database.db,
    config.orderLinkSecret,
    clock.now().getTime(),
  );
  const purchases: PurchaseDeps = {
    db: database.db,
    clock,
    psp: options.paymentProvider ?? paymentProviderFor(config),
    baseUrl: config.baseUrl,
    orderLinks: createOrderLinks(config.baseUrl, orderLinkSecret),
    logger,
    failpoints: options.failpoints,
    instance,
  };
  const checkout: CheckoutDeps = { db: database.db, clock, purchases };
  const billing: BillingDeps = {
    db: database.db,
    clock,
    psp: purchases.psp,
    baseUrl: config.baseUrl,
    logger,
  };
  const webhookTargets: TargetPolicy = {
    allowLoopback: config.webhooks.allowLoopback,
    resolveHost: options.webhooks?.resolveHost ?? systemResolver(),
  };
  const rateLimiters: RateLimiters = config.redis
    ? await (await import('./http/rate-limit-redis.ts')).openRedisRateLimiters(config.redis, clock, logger)
    : createMemoryRateLimiters(clock);
  const configuredStore = await createFileStore(config.evidenceStorage, database.db, clock);
  const evidenceStore = options.wrapEvidenceStore?.(configuredStore) ?? configuredStore;
  const signingKeys = createKeyStore(database.db, { clock, secret: config.signingKeysSecret });
  const app = buildApp({
    config,
    signingKeys,
    database,
    clock,
    mailTransport,
    logger,
    checkout,
    billing,
    webhookTargets,
    rateLimiters,
    evidence: { store: evidenceStore, failpoints: options.evidenceFailpoints },
  });
  const log = app.log as JobLogger;
  const base = { db: database.db, clock };
  const orderWebhooks = {
    db: database.db,
    config,
    orderLinks: purchases.orderLinks,
    targets: webhookTargets,
    timeoutMs: options.webhooks?.timeoutMs ?? DELIVERY_TIMEOUT_MS,
  };
  // In the order `runSweeps` runs them: the recovery before the sessions it settles, the term-end
  // sweep before the followed orders it moves.
  const wirings: ModuleWiring[] = [
    mailWiring({ ...base, transport: mailTransport, from: config.mailFrom, logger: app.log }),
    purchaseWiring(purchases, log),
    checkoutWiring(checkout),
    workspaceWiring({ ...base, baseUrl: config.baseUrl, log }),
    idempotencyWiring(base),
    mppWiring(base),
    oauthWiring(base),
    webhooksWiring({
      ...base,
      targets: webhookTargets,
      timeoutMs: orderWebhooks.timeoutMs,
      baseUrl: config.baseUrl,
      findOwner: findWorkspaceOwner,
      logger: app.log,
    }),
    accountsWiring({ ...base, baseUrl: config.baseUrl }),
    complianceWiring({
      ...base,
      log,
      store: evidenceStore,
      knownWorkspaces: (ids) => knownWorkspaceIds(database.db, ids),
      othersFile: isPackageFile,
    }),
    orderFollowingWiring({
      ...base,
      notifiers: {
        ucp: ucpOrderNotifier({ ...orderWebhooks, signingKeys }),
        acp: acpOrderNotifier(orderWebhooks),
      },
    }),
    instancesWiring(database.db),
    // Builds stream in a worker opening the same database and store; a test's wrapped store (faults
    // between the service and its store) or in-memory database exists in this thread only.
    evidencePackageWiring(
      {
        ...base,
        store: evidenceStore,
        documents:
          options.auditDocuments ?? ((workspaceId) => auditDocuments(database.db, workspaceId, clock)),
        log,
      },
      database.source && !options.wrapEvidenceStore
        ? { database: database.source, storage: config.evidenceStorage }
        : undefined,
    ),
    jobsWiring(base),
  ];
  const jobs = new JobRunner({
    db: database.db,
    dialect: database.dialect,
    clock,
    logger: log,
    pollIntervalMs: config.jobPollIntervalMs,
    concurrency: JOB_CONCURRENCY,
    perKeyConcurrency: JOBS_PER_KEY,
    leaseMs: config.jobLeaseMs,
    ...combineWiring(wirings),
  });

  return {
    config,
    clock,
    database,
    mailTransport,
    jobs,
    app,
    purchases,
    checkout,
    evidenceStore,
    signingKeys,
    appliedMigrations,
    async close() {
      await app.close();
      await rateLimiters.close();
      const stopping = jobs.stop();
      await Promise.all(wirings.map((wiring) => wiring.stop?.()));
      await stopping;
      await instance.stop();
      mailTransport.close();
      evidenceStore.close();
      if (!options.database) await database.close();
    },
  };
}
