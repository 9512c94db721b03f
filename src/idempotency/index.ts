export {
  checkIdempotencyKey,
  deleteExpiredKeys,
  fingerprintOf,
  type IdempotencyDeps,
  type IdempotencyOutcome,
  type IdempotentRequest,
  KEY_RETENTION_MS,
  type KeyProblem,
  MAX_KEY_LENGTH,
  MIN_KEY_LENGTH,
  runIdempotently,
  type StoredResponse,
} from './store.ts';
export { idempotencyWiring } from './wiring.ts';
