import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { useBoundedJsonParser } from '../../http/json-body.ts';
import { applyRateLimit } from '../../http/rate-limit.ts';
import type { ChannelContext } from '../context.ts';
import { acpError, handleAcpError, sendAcp } from './errors.ts';
import { registerSessionRoutes } from './routes.ts';
import { ACP_VERSION, SUPPORTED_ACP_VERSIONS } from './version.ts';

export { ACP_VERSION, handleAcpError, SUPPORTED_ACP_VERSIONS };

/** ACP 2026-04-17 checkout sessions under /api/acp/checkout_sessions. */
export async function acpChannel(app: FastifyInstance, context: ChannelContext): Promise<void> {
  // Bodiless POSTs (cancel) often still carry `Content-Type: application/json`.
  useBoundedJsonParser(app, { emptyIsNone: true });
  applyRateLimit(app, context.limiter, 'acp', (_request, reply) =>
    sendAcp(reply, acpError(429, 'rate_limited', 'Too many requests; retry after the time in Retry-After.')),
  );
  app.addHook('onRequest', requireSupportedVersion);
  app.setErrorHandler(handleAcpError);
  registerSessionRoutes(app.withTypeProvider<TypeBoxTypeProvider>(), context);
}

/** `API-Version` may be left out (it then means the current version); an unknown one is refused. */
async function requireSupportedVersion(request: FastifyRequest, reply: FastifyReply) {
  const requested = request.headers['api-version'];
  if (requested === undefined) return;
  if (typeof requested === 'string' && SUPPORTED_ACP_VERSIONS.includes(requested)) return;
  const newestFirst = [...SUPPORTED_ACP_VERSIONS].reverse();
  return sendAcp(
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
