import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { type Static, Type } from 'typebox';
import type { Config } from '../../config.ts';
import { ACP_VERSION, SUPPORTED_ACP_VERSIONS } from './version.ts';

/** Where the ACP API lives. */
export const ACP_PREFIX = '/api/acp';

const AcpDiscovery = Type.Object({
  protocol: Type.Object({
    name: Type.Literal('acp'),
    version: Type.String(),
    supported_versions: Type.Array(Type.String()),
  }),
  api_base_url: Type.String(),
  transports: Type.Array(Type.Literal('rest')),
  capabilities: Type.Object({
    services: Type.Array(Type.Literal('checkout')),
    supported_currencies: Type.Array(Type.Literal('usd')),
  }),
});

/**
 * `/.well-known/acp.json`: where the ACP API lives and which versions it speaks. Public and the
 * same for everyone; payment handlers and merchant ids belong in the session, never here.
 */
export function registerAcpDiscovery(app: FastifyInstance, config: Config): void {
  const document: Static<typeof AcpDiscovery> = {
    protocol: { name: 'acp', version: ACP_VERSION, supported_versions: [...SUPPORTED_ACP_VERSIONS] },
    api_base_url: `${config.baseUrl}${ACP_PREFIX}`,
    transports: ['rest'],
    capabilities: { services: ['checkout'], supported_currencies: ['usd'] },
  };
  app
    .withTypeProvider<TypeBoxTypeProvider>()
    .get(
      '/.well-known/acp.json',
      { schema: { response: { 200: AcpDiscovery } } },
      async (_request, reply) => {
        reply.header('cache-control', 'public, max-age=3600');
        return document;
      },
    );
}
