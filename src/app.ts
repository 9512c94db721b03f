import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import { API_PREFIX, apiV1, type DocumentedRoute, registerApiDocsPage } from './api/index.ts';
import { type BillingDeps, providerEventRoutes } from './billing/index.ts';
import { ACP_CHANNEL } from './channels/acp/index.ts';
import type { ProtocolChannel } from './channels/channel.ts';
import type { ChannelContext } from './channels/context.ts';
import { MPP_CHANNEL } from './channels/mpp/index.ts';
import { UCP_CHANNEL } from './channels/ucp/index.ts';
import type { CheckoutDeps } from './checkout/index.ts';
import type { EvidenceStorage } from './compliance/index.ts';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './db/database.ts';
import { answerUnroutableUrl, clientErrorAnswer, registerHttpBasics, requestIdFrom } from './http/basics.ts';
import { DeferredCompilation } from './http/deferred-compilation.ts';
import type { ErrorSurface } from './http/errors.ts';
import { registerHealthRoutes } from './http/health.ts';
import { PROBLEM_ERRORS } from './http/problem.ts';
import type { RateLimiters } from './http/rate-limit.ts';
import { requestLogger } from './http/request-logger.ts';
import { deferredResponseSerializers } from './http/serialization.ts';
import { requestValidator } from './http/validation.ts';
import { type MailTransport, registerDevMailboxRoutes } from './mail/index.ts';
import { mcpEndpoint } from './mcp/index.ts';
import { oauthRoutes } from './oauth/index.ts';
import type { Clock } from './shared/clock.ts';
import type { KeyStore } from './signing/index.ts';
import { pagesBeforeRouting, type WebDeps, webApp } from './web/index.ts';
import type { TargetPolicy } from './webhooks/index.ts';

export interface AppDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  mailTransport: MailTransport;
  logger: FastifyBaseLogger;
  checkout: CheckoutDeps;
  /** The Billing page's hosted checkouts and the provider's events. */
  billing: BillingDeps;
  webhookTargets: TargetPolicy;
  /** Where every rate limit counts: this process, or the Redis all instances share. */
  rateLimiters: RateLimiters;
  evidence: EvidenceStorage;
  signingKeys: KeyStore;
}

/** The checkout protocols agents buy through; a new protocol is one more entry. */
const CHANNELS: readonly ProtocolChannel[] = [ACP_CHANNEL, UCP_CHANNEL, MPP_CHANNEL];

const channelOf = (url: string) => CHANNELS.find((channel) => url.startsWith(`${channel.prefix}/`));

/** The error format of the surface a URL belongs to: a protocol's own, else REST problems. */
function errorSurfaceFor(url: string): ErrorSurface {
  return channelOf(url)?.errors ?? PROBLEM_ERRORS;
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Compiles the request validators and response serializers no request has needed yet; throws
     * one error naming every route whose schema does not compile.
     */
    compileDeferredSchemas(): Promise<void>;
  }
}

/** Builds the HTTP application from the modules; `serve.ts` boots it, tests inject into it. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const deferred = new DeferredCompilation();
  const https = deps.config.baseUrl.startsWith('https:');
  const webDeps: WebDeps = {
    db: deps.database.db,
    clock: deps.clock,
    config: deps.config,
    webhookTargets: deps.webhookTargets,
    billing: deps.billing,
    orderLinks: deps.checkout.purchases.orderLinks,
    evidence: deps.evidence,
  };
  const pages = pagesBeforeRouting(webDeps);
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestIdFrom,
    childLoggerFactory: requestLogger,
    bodyLimit: deps.config.bodyLimitBytes,
    return503OnClosing: true,
    trustProxy: deps.config.trustedProxies.length > 0 ? deps.config.trustedProxies : false,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    frameworkErrors: answerUnroutableUrl({ https, surfaceFor: errorSurfaceFor, page: pages.unroutableUrl }),
    clientErrorHandler: clientErrorAnswer({ https }),
    schemaController: { compilersFactory: { buildSerializer: deferredResponseSerializers(deferred) } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.setValidatorCompiler(
    requestValidator({
      // REST keeps null for "clear this field" (refused where a field cannot be cleared).
      nullAsAbsent: (url) => channelOf(url)?.nullAsAbsent ?? false,
      deferred,
    }),
  );
  app.decorate('compileDeferredSchemas', () => deferred.compileAll());

  closeConnectionsAsTheyGoIdle(app);
  registerHttpBasics(app, {
    https,
    surfaceFor: errorSurfaceFor,
    notFoundPage: pages.notFound,
    methodNotAllowedPage: pages.methodNotAllowed,
  });
  registerHealthRoutes(app, deps.database);
  for (const channel of CHANNELS) channel.discovery(app, deps);
  const context: ChannelContext = {
    checkout: deps.checkout,
    config: deps.config,
    limiter: deps.rateLimiters.create('channels', deps.config.rateLimit),
    signingKeys: deps.signingKeys,
  };
  for (const channel of CHANNELS) app.register(channel.routes, { prefix: channel.prefix, ...context });
  const apiRoutes: DocumentedRoute[] = [];
  app.register(apiV1, {
    prefix: API_PREFIX,
    routeTable: apiRoutes,
    db: deps.database.db,
    clock: deps.clock,
    config: deps.config,
    webhookTargets: deps.webhookTargets,
    rateLimiters: deps.rateLimiters,
    evidence: deps.evidence,
  });
  registerApiDocsPage(app, API_PREFIX);
  app.register(oauthRoutes, {
    db: deps.database.db,
    clock: deps.clock,
    config: deps.config,
    targets: deps.webhookTargets,
    limiter: deps.rateLimiters.create('oauth', deps.config.rateLimit),
  });
  app.register(mcpEndpoint, {
    db: deps.database.db,
    clock: deps.clock,
    config: deps.config,
    rateLimiters: deps.rateLimiters,
    routeTable: apiRoutes,
    app,
  });
  app.register(providerEventRoutes, deps.billing);
  app.register(webApp, webDeps);
  if (deps.mailTransport.kind === 'dev-mailbox' && deps.config.env !== 'production') {
    registerDevMailboxRoutes(app, deps.database.db);
  }
  return app;
}

/** How often a closing server looks for keep-alive connections whose last response has finished. */
const IDLE_SWEEP_INTERVAL_MS = 50;

/**
 * `forceCloseConnections: 'idle'` closes the connections that are idle when closing starts. A
 * connection whose response is still being written then becomes idle a moment later and would
 * keep the close waiting for the whole keep-alive timeout (72 s), so while closing, idle
 * connections are closed as they appear; requests in flight still finish.
 */
function closeConnectionsAsTheyGoIdle(app: FastifyInstance): void {
  let sweep: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    sweep = setInterval(() => app.server.closeIdleConnections(), IDLE_SWEEP_INTERVAL_MS);
    sweep.unref();
  });
  app.addHook('onClose', async () => clearInterval(sweep));
}
