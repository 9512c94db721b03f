import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import type { KeyStore } from '../signing/index.ts';
import { registerAcpDiscovery } from './acp.ts';
import { registerMppOpenApi } from './mpp-openapi.ts';
import { registerUcpDiscovery } from './ucp.ts';

/** Discovery documents agents read before buying: ACP, UCP and the MPP OpenAPI description. */
export function registerDiscoveryRoutes(app: FastifyInstance, config: Config, signingKeys: KeyStore): void {
  registerAcpDiscovery(app, config);
  registerUcpDiscovery(app, config, signingKeys);
  registerMppOpenApi(app, config);
}
