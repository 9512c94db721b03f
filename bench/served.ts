import { PLAN_ENTITLEMENTS } from '../src/catalog/index.ts';

/**
 * The service as `npm start` runs it, for benchmarks that load it from outside: the same entry,
 * configuration from the environment, logging to stdout. Only the enterprise plan's 1,200 requests
 * a minute per key is lifted (a load generator passes it in a second); every request is still
 * counted by the limiter.
 */
(PLAN_ENTITLEMENTS.enterprise as { apiRequestsPerMinute: number }).apiRequestsPerMinute = 1_000_000_000;
await import('../src/main.ts');
