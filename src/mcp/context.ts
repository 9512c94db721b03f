import type { FastifyInstance } from 'fastify';
import type { DocumentedRoute } from '../api/index.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/schema.ts';
import type { RateLimiters } from '../http/rate-limit.ts';
import type { Clock } from '../shared/clock.ts';

export interface McpDeps {
  db: Db;
  clock: Clock;
  config: Config;
  rateLimiters: RateLimiters;
  /** The /api/v1 routes as registered (filled before the first request): the tools come from them. */
  routeTable: readonly DocumentedRoute[];
  /** The root application, whose routes the tools run in process. */
  app: FastifyInstance;
}
