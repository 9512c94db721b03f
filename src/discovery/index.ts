import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.ts';

/** Discovery documents agents read before buying: /.well-known/acp.json and /.well-known/ucp. */
export function registerDiscoveryRoutes(_app: FastifyInstance, _config: Config): void {}
