import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorHandlerFor, sendWire } from '../../http/errors.ts';
import { useBoundedJsonParser } from '../../http/json-body.ts';
import { applyRateLimit } from '../../http/rate-limit.ts';
import type { ProtocolChannel } from '../channel.ts';
import type { ChannelContext } from '../context.ts';
import { ACP_PREFIX, registerAcpDiscovery } from './discovery.ts';
import { ACP_ERRORS, acpError } from './errors.ts';
import { registerSessionRoutes } from './routes.ts';
import { SUPPORTED_ACP_VERSIONS } from './version.ts';

export { type AcpOrderNotifierDeps, acpOrderNotifier } from './orders.ts';

/** ACP 2026-04-17 checkout sessions under /api/acp/checkout_sessions; ACP clients send unset fields as null. */
export const ACP_CHANNEL: ProtocolChannel = {
  prefix: ACP_PREFIX,
  routes: acpRoutes,
  errors: ACP_ERRORS,
  nullAsAbsent: true,
  discovery: (app, { config }) => registerAcpDiscovery(app, config),
};

async function acpRoutes(app: FastifyInstance, context: ChannelContext): Promise<void> {
  // Bodiless POSTs (cancel) often still carry `Content-Type: application/json`.
  useBoundedJsonParser(app, { emptyIsNone: true });
  applyRateLimit(app, context.limiter, 'acp', ACP_ERRORS);
  app.addHook('onRequest', requireSupportedVersion);
  app.setErrorHandler(errorHandlerFor(ACP_ERRORS));
  registerSessionRoutes(app.withTypeProvider<TypeBoxTypeProvider>(), context);
}

/** `API-Version` may be left out (it then means the current version); an unknown one is refused. */
async function requireSupportedVersion(request: FastifyRequest, reply: FastifyReply) {
  const requested = request.headers['api-version'];
  if (requested === undefined) return;
  if (typeof requested === 'string' && SUPPORTED_ACP_VERSIONS.includes(requested)) return;
  const newestFirst = [...SUPPORTED_ACP_VERSIONS].reverse();
  return sendWire(
    reply,
    acpError(
      400,
      'unsupported_api_version',
      `Unsupported API-Version; send one of: ${newestFirst.join(', ')}.`,
      {
        supported_versions: newestFirst,
      },
    ),
  );
}
