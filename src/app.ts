import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify';
import type { LoggerOptions } from 'pino';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './db/database.ts';
import { registerHttpBasics, requestIdFrom } from './http/basics.ts';
import { registerHealthRoutes } from './http/health.ts';
import { registerDevMailboxRoutes } from './mail/dev-mailbox.routes.ts';
import type { MailTransport } from './mail/index.ts';
import type { Clock } from './shared/clock.ts';

export interface AppDeps {
  config: Config;
  database: DatabaseHandle;
  clock: Clock;
  mailTransport: MailTransport;
  /** Pino options, a ready logger (tests capture lines), or false for none. */
  logger: LoggerOptions | FastifyBaseLogger | false;
}

/** Builds the HTTP application from the modules; `main.ts` boots it, tests inject into it. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    ...(isLoggerInstance(deps.logger) ? { loggerInstance: deps.logger } : { logger: deps.logger }),
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: requestIdFrom,
    bodyLimit: deps.config.bodyLimitBytes,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
  }).withTypeProvider<TypeBoxTypeProvider>();

  registerHttpBasics(app, { https: deps.config.baseUrl.startsWith('https:') });
  registerHealthRoutes(app, deps.database);
  if (deps.mailTransport.kind === 'dev-mailbox' && deps.config.env !== 'production') {
    registerDevMailboxRoutes(app, deps.database.db);
  }
  return app;
}

function isLoggerInstance(logger: AppDeps['logger']): logger is FastifyBaseLogger {
  return typeof logger === 'object' && typeof (logger as FastifyBaseLogger).child === 'function';
}
