import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

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
 * (under `max` when given, e.g. the rate of the key's plan, else the limiter's own).
 */
export interface RateLimiter {
  hit(key: string, now: number, max?: number): RateLimitVerdict;
}

export interface RateLimit {
  /** Requests allowed per key in each window. */
  max: number;
  windowMs: number;
}

/**
 * In-process fixed-window counters. With several instances each counts its own share; a shared
 * store (Redis) can implement the same interface for a global limit.
 */
export function createMemoryRateLimiter(limit: RateLimit): RateLimiter {
  const windows = new Map<string, { start: number; count: number }>();
  let lastSweep = 0;
  return {
    hit(key, now, max = limit.max) {
      if (now - lastSweep > limit.windowMs) {
        for (const [k, w] of windows) if (now - w.start >= limit.windowMs) windows.delete(k);
        lastSweep = now;
      }
      let current = windows.get(key);
      if (!current || now - current.start >= limit.windowMs) {
        current = { start: now, count: 0 };
        windows.set(key, current);
      }
      current.count++;
      return {
        allowed: current.count <= max,
        limit: max,
        remaining: Math.max(0, max - current.count),
        resetSeconds: Math.max(1, Math.ceil((current.start + limit.windowMs - now) / 1000)),
      };
    },
  };
}

/** The IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers), for clients that pace themselves. */
export function setRateLimitHeaders(reply: FastifyReply, verdict: RateLimitVerdict): void {
  reply.header('ratelimit-limit', String(verdict.limit));
  reply.header('ratelimit-remaining', String(verdict.remaining));
  reply.header('ratelimit-reset', String(verdict.resetSeconds));
}

/**
 * Limits every route of `scope` per client IP; `reject` answers in the surface's own error
 * format (the hook sets `Retry-After` first).
 */
export function applyRateLimit(
  scope: FastifyInstance,
  limiter: RateLimiter,
  name: string,
  reject: (request: FastifyRequest, reply: FastifyReply, retryAfterSeconds: number) => FastifyReply,
): void {
  scope.addHook('onRequest', async (request, reply) => {
    const verdict = limiter.hit(`${name}:${request.ip}`, Date.now());
    if (verdict.allowed) return;
    reply.header('retry-after', String(verdict.resetSeconds));
    return reject(request, reply, verdict.resetSeconds);
  });
}
