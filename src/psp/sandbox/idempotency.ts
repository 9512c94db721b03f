import { ApiError, invalidRequest } from './errors.ts';
import type { SandboxState } from './state.ts';

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const RETENTION_MS = 24 * 60 * 60 * 1000;

export interface IdempotentRequest {
  readonly method: string;
  readonly path: string;
  /** Canonical form of the request parameters. */
  readonly fingerprint: string;
}

export interface StoredResponse {
  readonly status: number;
  /** The serialized JSON body, replayed byte for byte. */
  readonly payload: string;
}

export type IdempotencyDecision =
  | { readonly kind: 'execute' }
  | { readonly kind: 'replay'; readonly response: StoredResponse }
  | { readonly kind: 'reject'; readonly error: ApiError };

/**
 * Stripe's v1 idempotency layer: the first request with a key reserves it; once its response is
 * stored, identical requests get that response replayed; anything else with the key is refused.
 * Stored responses live in the sandbox state (kept across restarts with it); a reservation lives
 * only as long as its request, in this process.
 */
export class IdempotencyStore {
  readonly #reserved = new Map<string, IdempotentRequest & { startedAtMs: number }>();
  readonly #state: SandboxState;

  constructor(state: SandboxState) {
    this.#state = state;
  }

  begin(key: string, request: IdempotentRequest): IdempotencyDecision {
    if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) return reject(keyTooLong(key));
    if (this.#reserved.has(key)) return reject(keyInUse(key));
    const kept = this.#retainedResponse(key);
    if (!kept) {
      this.#reserved.set(key, { ...request, startedAtMs: this.#state.nowMs() });
      return { kind: 'execute' };
    }
    if (kept.method !== request.method || kept.path !== request.path) {
      return reject(endpointMismatch(key, kept.path, request.path));
    }
    if (kept.fingerprint !== request.fingerprint) return reject(parametersMismatch(key));
    return { kind: 'replay', response: { status: kept.status, payload: kept.payload } };
  }

  complete(key: string, response: StoredResponse): void {
    const request = this.#reserved.get(key);
    if (!request) return;
    this.#reserved.delete(key);
    this.#state.keepResponse(key, { ...request, ...response });
  }

  /** Forgets a reservation whose request had no effect, so the key can be retried. */
  release(key: string): void {
    this.#reserved.delete(key);
  }

  #retainedResponse(key: string) {
    const kept = this.#state.keptResponse(key);
    if (kept && this.#state.nowMs() - kept.startedAtMs >= RETENTION_MS) {
      this.#state.forgetResponse(key);
      return undefined;
    }
    return kept;
  }
}

/** Order-insensitive for object keys, so `a=1&b=2` and `b=2&a=1` count as the same parameters. */
export function fingerprintParams(params: unknown): string {
  return JSON.stringify(params ?? {}, (_key, value: unknown) =>
    value !== null && typeof value === 'object' && !Array.isArray(value)
      ? Object.fromEntries(
          Object.entries(value).sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0)),
        )
      : value,
  );
}

function reject(error: ApiError): IdempotencyDecision {
  return { kind: 'reject', error };
}

function idempotencyError(message: string): ApiError {
  return new ApiError(400, { type: 'idempotency_error', message });
}

function keyTooLong(key: string): ApiError {
  return idempotencyError(
    `Idempotency keys can be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters long, but this one has ${key.length}.`,
  );
}

function keyInUse(key: string): ApiError {
  return invalidRequest(
    'There is currently another in-progress request using this Idempotent Key (that probably means you ' +
      `submitted twice, and the other request is still going through): ${key}. Please try again later.`,
    { status: 409, code: 'idempotency_key_in_use' },
  );
}

function endpointMismatch(key: string, firstPath: string, path: string): ApiError {
  return idempotencyError(
    `Keys for idempotent requests can only be used for the same endpoint they were first used for ('${firstPath}' vs ` +
      `'${path}'). Try using a key other than '${key}' if you meant to execute a different request.`,
  );
}

function parametersMismatch(key: string): ApiError {
  return idempotencyError(
    'Keys for idempotent requests can only be used with the same parameters they were first used with. ' +
      `Try using a key other than '${key}' if you meant to execute a different request.`,
  );
}
