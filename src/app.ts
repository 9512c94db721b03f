import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
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
  logger: FastifyServerOptions['logger'];
}

/** Builds the HTTP application from the modules; `main.ts` boots it, tests inject into it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    logger: deps.logger,
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
  await app.ready();
  return app;
}
