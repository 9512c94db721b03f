import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino, { type LoggerOptions } from 'pino';
import {
  deleteEndedLinks,
  deleteExpiredPasskeyChallenges,
  deleteExpiredSessions,
  deleteStaleThrottles,
  SEND_ACCOUNT_LINK_JOB,
  sendAccountLinkJob,
} from './accounts/index.ts';
import { buildApp } from './app.ts';
import type { BillingDeps } from './billing/index.ts';
import { acpOrderNotifier } from './channels/acp/index.ts';
import { deleteOldClaims } from './channels/mpp/index.ts';
import { ucpOrderNotifier } from './channels/ucp/index.ts';
import { type CheckoutDeps, expireSessions, settleSessions } from './checkout/index.ts';
import { type EvidenceFailpoints, PENDING_FILE_GRACE_MS, sweepEvidenceFiles } from './compliance/index.ts';
import type { Config } from './config.ts';
import { type DatabaseHandle, openDatabase } from './db/database.ts';
import { migrateToLatest } from './db/migrate.ts';
import {
  BUILD_PACKAGE_JOB,
  buildPackageJob,
  type DocumentsProvider,
  isPackageFile,
  sweepPackages,
} from './evidence-package/index.ts';
import { createMemoryRateLimiters, type RateLimiters } from './http/rate-limit.ts';
import { deleteExpiredKeys } from './idempotency/index.ts';
import { deleteSilentInstances, startInstance } from './instances/index.ts';
import { deleteFinishedJobs, type JobLogger, JobRunner } from './jobs/index.ts';
import {
  createDevMailboxTransport,
  createSmtpTransport,
  type MailTransport,
  SEND_MAIL_JOB,
  sendMailJob,
} from './mail/index.ts';
import { sweepOAuthData } from './oauth/index.ts';
import { createStripeAdapter, type PaymentProvider } from './psp/index.ts';
import {
  advanceFollowedOrders,
  createOrderLinks,
  type Failpoints,
  loadOrderLinkSecret,
  NOTIFY_ORDER_JOB,
  type NotifyOrderPayload,
  type PurchaseDeps,
  recoverUnfinishedPurchases,
} from './purchase/index.ts';
import { auditDocuments } from './reports/index.ts';
import { type Clock, DAY_MS, MINUTE_MS, systemClock } from './shared/clock.ts';
import { createKeyStore, type KeyStore } from './signing/index.ts';
import { createFileStore, type FileStore } from './storage/index.ts';
import {
  DELIVER_WEBHOOK_JOB,
  DELIVERY_TIMEOUT_MS,
  deliverWebhookJob,
  type ResolveHost,
  sweepWebhookData,
  systemResolver,
  type TargetPolicy,
} from './webhooks/index.ts';
import {
  endElapsedTerms,
  findWorkspaceOwner,
  knownWorkspaceIds,
  sendDueTermReminders,
} from './workspace/index.ts';

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
  const orderWebhooks = {
    db: database.db,
    config,
    orderLinks: purchases.orderLinks,
    targets: webhookTargets,
    timeoutMs: options.webhooks?.timeoutMs ?? DELIVERY_TIMEOUT_MS,
  };
  const notifyUcpOrder = ucpOrderNotifier({ ...orderWebhooks, signingKeys });
  const notifyAcpOrder = acpOrderNotifier(orderWebhooks);
  // Builds stream in a worker opening the same database and store; a test's wrapped store (faults
  // between the service and its store) or in-memory database exists in this thread only.
  const packageBuilds = buildPackageJob(
    {
      db: database.db,
      clock,
      store: evidenceStore,
      documents: options.auditDocuments ?? ((workspaceId) => auditDocuments(database.db, workspaceId, clock)),
      log: app.log as JobLogger,
    },
    database.source && !options.wrapEvidenceStore
      ? { database: database.source, storage: config.evidenceStorage }
      : undefined,
  );
  const jobs = new JobRunner({
    db: database.db,
    dialect: database.dialect,
    clock,
    logger: app.log as JobLogger,
    pollIntervalMs: config.jobPollIntervalMs,
    concurrency: JOB_CONCURRENCY,
    perKeyConcurrency: JOBS_PER_KEY,
    leaseMs: config.jobLeaseMs,
    definitions: {
      [SEND_MAIL_JOB]: sendMailJob({
        db: database.db,
        clock,
        transport: mailTransport,
        from: config.mailFrom,
        logger: app.log,
      }),
      [SEND_ACCOUNT_LINK_JOB]: sendAccountLinkJob({ db: database.db, clock, baseUrl: config.baseUrl }),
      [NOTIFY_ORDER_JOB]: {
        async run(payload, context) {
          const { orderId, follower } = payload as NotifyOrderPayload;
          const eventId = `evt_${context.jobId}`;
          if (follower === 'ucp') await notifyUcpOrder(orderId, eventId);
          else await notifyAcpOrder(orderId, eventId);
        },
      },
      [DELIVER_WEBHOOK_JOB]: deliverWebhookJob({
        db: database.db,
        clock,
        targets: webhookTargets,
        timeoutMs: options.webhooks?.timeoutMs ?? DELIVERY_TIMEOUT_MS,
        baseUrl: config.baseUrl,
        findOwner: findWorkspaceOwner,
        logger: app.log,
      }),
      [BUILD_PACKAGE_JOB]: packageBuilds,
    },
    sweeps: [
      {
        name: 'purchase.recover-unfinished',
        intervalMs: 30_000,
        run: async () => {
          const finished = await recoverUnfinishedPurchases(purchases);
          if (finished > 0) app.log.warn({ count: finished }, 'recovered unfinished purchases');
        },
      },
      {
        // After the recovery: the sessions whose payments it finished take their outcome.
        name: 'checkout.settle-sessions',
        intervalMs: 30_000,
        run: async () => void (await settleSessions(checkout)),
      },
      {
        name: 'workspace.end-elapsed-terms',
        intervalMs: MINUTE_MS,
        run: async () => {
          for (const term of await endElapsedTerms(database.db, { clock, baseUrl: config.baseUrl })) {
            app.log.info(
              {
                event: 'term.ended',
                workspaceId: term.workspaceId,
                orderId: term.orderId,
                plan: term.plan,
                planNow: term.planNow,
                ownersNotified: term.ownersNotified,
                subscriptionsPaused: term.subscriptionsPaused.length,
              },
              'term ended',
            );
          }
        },
      },
      {
        name: 'workspace.term-reminders',
        intervalMs: 15 * MINUTE_MS,
        run: async () => {
          for (const notice of await sendDueTermReminders(database.db, { clock, baseUrl: config.baseUrl })) {
            app.log.info({ event: 'term.reminder_queued', ...notice }, 'term end reminder queued');
          }
        },
      },
      {
        name: 'checkout.expire-sessions',
        intervalMs: MINUTE_MS,
        run: async () => void (await expireSessions(checkout)),
      },
      {
        name: 'idempotency.delete-expired-keys',
        intervalMs: 15 * MINUTE_MS,
        run: () => deleteExpiredKeys(database.db, clock),
      },
      {
        name: 'mpp.delete-old-claims',
        intervalMs: 60 * MINUTE_MS,
        run: async () => void (await deleteOldClaims(database.db, clock.now().getTime())),
      },
      {
        name: 'oauth.delete-expired',
        intervalMs: 60 * MINUTE_MS,
        run: () => sweepOAuthData({ db: database.db, clock }),
      },
      {
        name: 'webhooks.retention',
        intervalMs: 60 * MINUTE_MS,
        run: async () => void (await sweepWebhookData(database.db, clock)),
      },
      {
        name: 'accounts.delete-expired-sessions',
        intervalMs: 15 * MINUTE_MS,
        run: async () => {
          await deleteExpiredSessions(database.db, clock);
          await deleteStaleThrottles(database.db, clock.now().getTime());
          await deleteEndedLinks(database.db, clock);
          await deleteExpiredPasskeyChallenges(database.db, clock);
        },
      },
      {
        name: 'evidence.sweep-orphan-files',
        intervalMs: 60 * MINUTE_MS,
        run: async () => {
          const swept = await sweepEvidenceFiles(
            {
              db: database.db,
              store: evidenceStore,
              knownWorkspaces: (ids) => knownWorkspaceIds(database.db, ids),
              othersFile: isPackageFile,
            },
            clock.now().getTime() - PENDING_FILE_GRACE_MS,
          );
          if (swept.finalized + swept.removed > 0) {
            app.log.warn({ event: 'evidence.orphans_swept', ...swept }, 'evidence files swept');
          }
          if (swept.foreign + swept.unnamed > 0) {
            app.log.warn(
              { event: 'evidence.files_left_alone', foreign: swept.foreign, unnamed: swept.unnamed },
              'the evidence store holds files no record of this database names: of workspaces it does not have (another database shares the store) or of its own (a failed deletion, or a restored copy sharing the store); left alone',
            );
          }
        },
      },
      {
        name: 'orders.advance-followed',
        intervalMs: 5_000,
        run: async () => void (await advanceFollowedOrders(database.db, clock)),
      },
      {
        name: 'instances.delete-silent',
        intervalMs: 60 * MINUTE_MS,
        run: async () => void (await deleteSilentInstances(database.db, DAY_MS)),
      },
      {
        name: 'evidence-package.sweep',
        intervalMs: 15 * MINUTE_MS,
        run: async () => {
          const swept = await sweepPackages({ db: database.db, clock, store: evidenceStore });
          if (swept.expired > 0)
            app.log.info({ event: 'evidence_package.expired', ...swept }, 'evidence packages expired');
        },
      },
      {
        name: 'jobs.delete-finished',
        intervalMs: 60 * MINUTE_MS,
        run: () => deleteFinishedJobs(database.db, new Date(clock.now().getTime() - 7 * DAY_MS)),
      },
    ],
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
      await packageBuilds.stop();
      await stopping;
      await instance.stop();
      mailTransport.close();
      evidenceStore.close();
      if (!options.database) await database.close();
    },
  };
}
