import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type {
  FastifyBaseLogger,
  FastifyInstance,
  RawReplyDefaultExpression,
  RawRequestDefaultExpression,
  RawServerDefault,
} from 'fastify';
import { Type } from 'typebox';
import type { EvidenceStorage } from '../compliance/index.ts';
import type { Config } from '../config.ts';
import type { Db } from '../db/schema.ts';
import type { RateLimiters } from '../http/rate-limit.ts';
import type { Clock } from '../shared/clock.ts';
import { IdInput } from '../shared/wire.ts';
import type { TargetPolicy } from '../webhooks/index.ts';
import type { DocumentedRoute } from './openapi.ts';

/**
 * What the /api/v1 routes are given: the database, the clock, the configuration, the webhook target
 * policy and where the rate limits count.
 */
export interface ApiDeps {
  db: Db;
  clock: Clock;
  config: Config;
  /** Where webhook subscriptions may point (checked when subscribing and before every attempt). */
  webhookTargets: TargetPolicy;
  rateLimiters: RateLimiters;
  /** Where evidence files live, and (in tests) where an upload "crashes". */
  evidence: EvidenceStorage;
  /** Filled with every route as it is registered: the MCP endpoint makes its tools from them. */
  routeTable?: DocumentedRoute[];
}

export type ApiScope = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export const IdParams = Type.Object({ id: IdInput('The id of the record.') });

/** The `data` of a `*.deleted` event. */
export const DeletedRecord = Type.Object(
  { id: Type.String() },
  { description: 'The id of the deleted record.' },
);
