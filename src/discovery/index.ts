import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';
import { registerAcpDiscovery } from './acp.ts';
import { registerMppOpenApi } from './mpp-openapi.ts';
import { registerUcpDiscovery } from './ucp.ts';

/** Discovery documents agents read before buying: ACP, UCP and the MPP OpenAPI description. */
export function registerDiscoveryRoutes(app: FastifyInstance, config: Config): void {
  registerAcpDiscovery(app, config);
  registerUcpDiscovery(app, config);
  registerMppOpenApi(app, config);
}
