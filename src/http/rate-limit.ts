import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Counts requests per key in fixed windows; `hit` says whether one more is allowed. */
export interface RateLimiter {
  hit(key: string, now: number): { allowed: true } | { allowed: false; retryAfterSeconds: number };
}

export interface RateLimit {
  /** Requests allowed per client IP in each window. */
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
    hit(key, now) {
      if (now - lastSweep > limit.windowMs) {
        for (const [k, w] of windows) if (now - w.start >= limit.windowMs) windows.delete(k);
        lastSweep = now;
      }
      const current = windows.get(key);
      if (!current || now - current.start >= limit.windowMs) {
        windows.set(key, { start: now, count: 1 });
        return { allowed: true };
      }
      current.count++;
      if (current.count <= limit.max) return { allowed: true };
      return {
        allowed: false,
        retryAfterSeconds: Math.max(1, Math.ceil((current.start + limit.windowMs - now) / 1000)),
      };
    },
  };
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
    reply.header('retry-after', String(verdict.retryAfterSeconds));
    return reject(request, reply, verdict.retryAfterSeconds);
  });
}
