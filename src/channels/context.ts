import type { CheckoutDeps } from '../checkout/index.ts';
import type { Config } from '../config.ts';
import type { RateLimiter } from '../http/rate-limit.ts';
import type { KeyStore } from '../signing/index.ts';

/** What a protocol channel gets from the app: the checkout core, configuration, its rate limiter and signing keys. */
export interface ChannelContext {
  checkout: CheckoutDeps;
  config: Config;
  limiter: RateLimiter;
  /** The business's message-signing keys (UCP signs its responses and webhooks with them). */
  signingKeys: KeyStore;
}
