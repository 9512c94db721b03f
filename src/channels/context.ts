import type { CheckoutDeps } from '../checkout/index.ts';
import type { Config } from '../config.ts';
import type { RateLimiter } from '../http/rate-limit.ts';

/** What a protocol channel gets from the app: the checkout core, configuration and its rate limiter. */
export interface ChannelContext {
  checkout: CheckoutDeps;
  config: Config;
  limiter: RateLimiter;
}
