import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Clock } from '../shared/clock.ts';
import { andThen, type MaybePromise } from '../shared/maybe-promise.ts';
import { type ErrorSurface, sendServiceError } from './errors.ts';
import { gate } from './gate.ts';

/** The state of one counter after a request was counted. */
export interface RateLimitVerdict {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets (at least 1). */
  resetSeconds: number;
}

/**
 * Counts requests per key in fixed windows; `hit` counts one more and says whether it is allowed
 * (under `max` when given, e.g. the rate of the key's plan, else the limiter's own). Counted in
 * this process, the verdict is there at once; counted in Redis, it is a promise.
 */
export interface RateLimiter {
  hit(key: string, max?: number): MaybePromise<RateLimitVerdict>;
}

export interface RateLimit {
  /** Requests allowed per key in each window. */
  max: number;
  windowMs: number;
}

/**
 * Makes the service's limiters, all counting in one place: this process (`createMemoryRateLimiters`)
 * or one Redis every instance shares (`openRedisRateLimiters`), chosen by `REDIS_URL`.
 */
export interface RateLimiters {
  /** `name` keeps the counters of one limiter apart from another's. */
  create(name: string, limit: RateLimit): RateLimiter;
  close(): Promise<void>;
}

/**
 * The fixed window holding `now`. Windows are aligned to the epoch rather than to a key's first
 * request, so every instance (and both implementations) agree on where a window starts and ends.
 */
export function windowAt(now: number, windowMs: number): { index: number; endsAt: number } {
  const index = Math.floor(now / windowMs);
  return { index, endsAt: (index + 1) * windowMs };
}

/** The verdict for the `count`th request of a window ending at `endsAt`. */
export function verdictFor(count: number, max: number, endsAt: number, now: number): RateLimitVerdict {
  return {
    allowed: count <= max,
    limit: max,
    remaining: Math.max(0, max - count),
    resetSeconds: Math.max(1, Math.ceil((endsAt - now) / 1000)),
  };
}

/** In-process fixed-window counters: with several instances each counts its own share. */
export function createMemoryRateLimiter(limit: RateLimit, clock: Clock): RateLimiter {
  const windows = new Map<string, { index: number; count: number }>();
  let sweptIndex = Number.NEGATIVE_INFINITY;
  return {
    hit(key, max = limit.max) {
      const now = clock.now().getTime();
      const window = windowAt(now, limit.windowMs);
      if (window.index !== sweptIndex) {
        for (const [k, w] of windows) if (w.index !== window.index) windows.delete(k);
        sweptIndex = window.index;
      }
      let current = windows.get(key);
      if (current?.index !== window.index) {
        current = { index: window.index, count: 0 };
        windows.set(key, current);
      }
      current.count++;
      return verdictFor(current.count, max, window.endsAt, now);
    },
  };
}

/** Limiters counting in this process (no `REDIS_URL`). */
export function createMemoryRateLimiters(clock: Clock): RateLimiters {
  return {
    create: (_name, limit) => createMemoryRateLimiter(limit, clock),
    close: async () => {},
  };
}

/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers), for clients that pace themselves. */
export function setRateLimitHeaders(reply: FastifyReply, verdict: RateLimitVerdict): void {
  reply.header('ratelimit-limit', String(verdict.limit));
  reply.header('ratelimit-remaining', String(verdict.remaining));
  reply.header('ratelimit-reset', String(verdict.resetSeconds));
}

/** Answers a request over a limit: 429 in the surface's format, with Retry-After. */
export function sendRateLimited(
  request: FastifyRequest,
  reply: FastifyReply,
  surface: ErrorSurface,
  verdict: RateLimitVerdict,
  counted: 'address' | 'API key',
): FastifyReply {
  return sendServiceError(request, reply, surface, {
    code: 'rate_limited',
    retryAfterSeconds: verdict.resetSeconds,
    counted,
  });
}

/** Limits every route of `scope` per client IP; a refusal is a 429 in the surface's own format. */
export function applyRateLimit(
  scope: FastifyInstance,
  limiter: RateLimiter,
  name: string,
  surface: ErrorSurface,
): void {
  scope.addHook(
    'onRequest',
    gate((request, reply) =>
      andThen(limiter.hit(`${name}:${request.ip}`), (verdict) => {
        if (verdict.allowed) return true;
        sendRateLimited(request, reply, surface, verdict, 'address');
        return false;
      }),
    ),
  );
}
