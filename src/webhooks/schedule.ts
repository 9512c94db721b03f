import { DAY_MS, HOUR_MS, MINUTE_MS } from '../shared/clock.ts';

/**
 * Delay before each retry, counted from the failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
 * 10 h. With the immediate first attempt that is 8 attempts over about 27 hours.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5_000,
  5 * MINUTE_MS,
  30 * MINUTE_MS,
  2 * HOUR_MS,
  5 * HOUR_MS,
  10 * HOUR_MS,
  10 * HOUR_MS,
];

export const MAX_DELIVERY_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

/** Each scheduled delay is stretched or shrunk by up to 20%, so retries of many deliveries spread out. */
export const RETRY_JITTER = 0.2;

/** Failed attempts in a row a receiver gets before its deliveries wait (its backoff). */
export const ENDPOINT_FAILURES_BEFORE_BACKOFF = 3;
/** The longest a failing receiver's deliveries wait before the next ones are tried. */
export const MAX_ENDPOINT_BACKOFF_MS = MINUTE_MS;

/**
 * A receiver's backoff after `failures` failed attempts in a row (across its deliveries): none
 * for the first few, then 1 s doubling to one minute. Its queued attempts wait that long (each
 * delivery's own schedule resumes after); other receivers' deliveries are not affected. A
 * success ends it.
 */
export function endpointBackoffMs(failures: number): number {
  const over = failures - ENDPOINT_FAILURES_BEFORE_BACKOFF;
  if (over < 0) return 0;
  return Math.min(1000 * 2 ** over, MAX_ENDPOINT_BACKOFF_MS);
}

/** A receiver's Retry-After is honoured up to one day; longer requests wait one day. */
export const MAX_RETRY_AFTER_MS = DAY_MS;

/**
 * Milliseconds a `Retry-After` value asks us to wait from `now`: delta seconds or an HTTP date.
 * Undefined when absent or unreadable; a date in the past is 0.
 */
export function retryAfterMs(header: string | null, now: Date): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
  // An HTTP date always names its day and month; Date.parse alone would take `-5` for a year.
  const at = /[A-Za-z]{3}/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) return undefined;
  return Math.min(Math.max(at - now.getTime(), 0), MAX_RETRY_AFTER_MS);
}

/**
 * How long after failed attempt `attempt` (1-based) the next one runs, or null when none is left.
 * A receiver's Retry-After can postpone the retry, never bring it forward.
 */
export function nextRetryDelay(
  attempt: number,
  retryAfter: number | undefined,
  random: () => number = Math.random,
): number | null {
  const scheduled = RETRY_DELAYS_MS[attempt - 1];
  if (scheduled === undefined) return null;
  const jittered = Math.round(scheduled * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random()));
  return Math.max(jittered, retryAfter ?? 0);
}
