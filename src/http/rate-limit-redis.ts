import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { type CommandParser, createClient, defineScript } from 'redis';
import { type RedisConfig, redactedRedisUrl } from '../config.ts';
import type { Clock } from '../shared/clock.ts';
import {
  createMemoryRateLimiter,
  type RateLimit,
  type RateLimiter,
  type RateLimiters,
  verdictFor,
  windowAt,
} from './rate-limit.ts';

/** While Redis is down, how often a request may check whether it answers again. */
const PROBE_INTERVAL_MS = 1000;
/** The longest pause between two reconnection attempts. */
const MAX_RECONNECT_DELAY_MS = 2000;
/** How long opening a connection may take, at start and on every reconnection. */
const CONNECT_TIMEOUT_MS = 2000;

/**
 * Counts one hit of a window's key and answers the count, in one atomic step: the first hit of a
 * window also sets the key's expiry, so no key outlives its window for long.
 */
const COUNT_HIT = defineScript({
  NUMBER_OF_KEYS: 1,
  SCRIPT:
    "local count = redis.call('INCR', KEYS[1]) " +
    "if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end " +
    'return count',
  parseCommand(parser: CommandParser, key: string, expiresInMs: number) {
    parser.pushKey(key);
    parser.push(String(expiresInMs));
  },
  transformReply: (reply: number) => Number(reply),
});

/**
 * One connection to Redis and whether it is usable. Any failed or slow count marks it down (one
 * warning per outage); while down, counts are refused at once and, at most once per
 * `PROBE_INTERVAL_MS`, a request sends a PING to find out whether Redis answers again. A
 * reconnection after a lost connection also ends the outage.
 */
class RedisLink {
  readonly #client;
  readonly #logger: FastifyBaseLogger;
  readonly #keyPrefix: string;
  readonly #shownUrl: string;
  readonly #timeoutMs: number;
  #up = false;
  #outageReported = false;
  #outageStartedAt = 0;
  #probing = false;
  #lastProbeAt = Number.NEGATIVE_INFINITY;

  constructor(config: RedisConfig, logger: FastifyBaseLogger) {
    this.#logger = logger;
    this.#keyPrefix = config.keyPrefix;
    this.#shownUrl = redactedRedisUrl(config.url);
    this.#timeoutMs = config.commandTimeoutMs;
    this.#client = createClient({
      url: config.url,
      // Never queue counts while reconnecting: the request counts in process instead.
      disableOfflineQueue: true,
      socket: {
        connectTimeout: CONNECT_TIMEOUT_MS,
        reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, MAX_RECONNECT_DELAY_MS),
      },
      scripts: { countHit: COUNT_HIT },
    });
    this.#client.on('error', (error: unknown) => this.#markDown(error));
    this.#client.on('ready', () => this.#markUp());
  }

  /** Starts connecting and waits for the first attempt's outcome, not for Redis to come up. */
  async open(): Promise<void> {
    const firstAttempt = new Promise<void>((resolve) => {
      this.#client.once('ready', resolve);
      this.#client.once('error', resolve);
    });
    this.#client.connect().catch((error: unknown) => this.#markDown(error));
    await firstAttempt;
  }

  /** The count after this hit, or `undefined` while Redis is unusable. */
  async count(key: string, expiresInMs: number): Promise<number | undefined> {
    if (!this.#up) {
      this.#probe();
      return undefined;
    }
    try {
      return await this.#answerInTime(this.#client.countHit(`${this.#keyPrefix}${key}`, expiresInMs));
    } catch (error) {
      this.#markDown(error);
      return undefined;
    }
  }

  close(): void {
    // Called once the HTTP server has closed, so no count is waiting; nothing is left to drain.
    this.#client.destroy();
  }

  #probe(): void {
    if (this.#probing || !this.#client.isReady) return;
    if (performance.now() - this.#lastProbeAt < PROBE_INTERVAL_MS) return;
    this.#probing = true;
    this.#lastProbeAt = performance.now();
    this.#answerInTime(this.#client.ping())
      .then(
        () => this.#markUp(),
        (error: unknown) => this.#markDown(error),
      )
      .finally(() => {
        this.#probing = false;
      });
  }

  /**
   * The reply, or a timeout error after `commandTimeoutMs`. The client's own command timeout ends
   * at the write, so a Redis that stops answering on an open connection would hold the request. A
   * reply or failure coming after the timeout is dropped: its outage is already reported.
   */
  async #answerInTime<T>(reply: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis did not answer within ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
    });
    try {
      return await Promise.race([reply, timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  #markDown(error: unknown): void {
    this.#up = false;
    if (this.#outageReported) {
      this.#logger.debug({ err: error, redis: this.#shownUrl }, 'Redis still unreachable');
      return;
    }
    this.#outageReported = true;
    this.#outageStartedAt = performance.now();
    this.#logger.warn(
      { err: error, redis: this.#shownUrl },
      'Redis unreachable: rate limits are counted per instance until it answers again',
    );
  }

  #markUp(): void {
    if (this.#up) return;
    this.#up = true;
    if (!this.#outageReported) return;
    this.#outageReported = false;
    this.#logger.info(
      { redis: this.#shownUrl, outageMs: Math.round(performance.now() - this.#outageStartedAt) },
      'Redis answers again: rate limits are shared again',
    );
  }
}

/**
 * Limiters counting in Redis, so that every instance sharing it shares each limit. Each window is
 * one key (`<prefix>ratelimit:<limiter>:<window>:<key>`); the window comes from the injected
 * clock, the key's expiry only cleans up. While Redis is unreachable each limiter counts in
 * process, as it would without Redis, and goes back to Redis once it answers.
 */
export async function openRedisRateLimiters(
  config: RedisConfig,
  clock: Clock,
  logger: FastifyBaseLogger,
): Promise<RateLimiters> {
  const link = new RedisLink(config, logger);
  await link.open();
  return {
    create(name: string, limit: RateLimit): RateLimiter {
      const fallback = createMemoryRateLimiter(limit, clock);
      return {
        async hit(key, max = limit.max) {
          const now = clock.now().getTime();
          const window = windowAt(now, limit.windowMs);
          const count = await link.count(
            `ratelimit:${name}:${window.index}:${key}`,
            window.endsAt + limit.windowMs - now,
          );
          if (count === undefined) return fallback.hit(key, max);
          return verdictFor(count, max, window.endsAt, now);
        },
      };
    },
    close: async () => link.close(),
  };
}
