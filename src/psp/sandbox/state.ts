import { unixSeconds } from './ids.ts';
import type { TestPaymentMethod } from './test-cards.ts';
import type { GrantedToken, PaymentIntent } from './types.ts';

/** A granted token plus the test payment method it was minted from (which scripts its charge outcome). */
export interface GrantedTokenRecord {
  readonly token: GrantedToken;
  readonly testPaymentMethod: TestPaymentMethod;
}

/**
 * All sandbox data, in memory. The public getters hand out copies so tests can inspect
 * without mutating; the record accessors are for the request handlers.
 */
export class SandboxState {
  readonly #tokens = new Map<string, GrantedTokenRecord>();
  readonly #paymentIntents = new Map<string, PaymentIntent>();
  readonly #now: () => Date;

  constructor(now: () => Date) {
    this.#now = now;
  }

  nowSeconds(): number {
    return unixSeconds(this.#now());
  }

  /** Newest first. */
  listPaymentIntents(): PaymentIntent[] {
    return [...this.#paymentIntents.values()].reverse().map((intent) => structuredClone(intent));
  }

  getPaymentIntent(id: string): PaymentIntent | undefined {
    const intent = this.#paymentIntents.get(id);
    return intent && structuredClone(intent);
  }

  getGrantedToken(id: string): GrantedToken | undefined {
    const record = this.grantedTokenRecord(id);
    return record && structuredClone(record.token);
  }

  /** The live record, with expiry applied as of the sandbox clock. */
  grantedTokenRecord(id: string): GrantedTokenRecord | undefined {
    const record = this.#tokens.get(id);
    if (record) deactivateIfExpired(record.token, this.nowSeconds());
    return record;
  }

  saveGrantedToken(record: GrantedTokenRecord): void {
    this.#tokens.set(record.token.id, record);
  }

  savePaymentIntent(intent: PaymentIntent): void {
    this.#paymentIntents.set(intent.id, intent);
  }
}

function deactivateIfExpired(token: GrantedToken, nowSeconds: number): void {
  const expiresAt = token.usage_limits.expires_at;
  if (token.deactivated_reason !== null || expiresAt === null || nowSeconds < expiresAt) return;
  token.deactivated_reason = 'expired';
  token.deactivated_at = expiresAt;
}
