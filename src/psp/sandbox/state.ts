import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { unixSeconds } from './ids.ts';
import { findTestPaymentMethod, type TestPaymentMethod } from './test-cards.ts';
import type { GrantedToken, PaymentIntent } from './types.ts';

/** A granted token plus the test payment method it was minted from (which scripts its charge outcome). */
export interface GrantedTokenRecord {
  readonly token: GrantedToken;
  readonly testPaymentMethodId: string;
  readonly testPaymentMethod: TestPaymentMethod;
}

/** A response kept under an idempotency key, replayed byte for byte. */
export interface KeptResponse {
  readonly method: string;
  readonly path: string;
  readonly fingerprint: string;
  readonly startedAtMs: number;
  readonly status: number;
  readonly payload: string;
}

/** Where a page of a list starts: after (older than) or before (newer than) the object at `position`. */
export interface ListSeek {
  readonly position: number | undefined;
  readonly direction: 'older' | 'newer';
  readonly limit: number;
}

const SCHEMA = `
  create table if not exists granted_tokens (
    id text primary key,
    test_payment_method text not null,
    body text not null
  );
  create table if not exists payment_intents (
    position integer primary key autoincrement,
    id text not null unique,
    body text not null
  );
  create table if not exists idempotent_responses (
    key text primary key,
    body text not null
  );
`;

/**
 * All sandbox data: the emulated provider's own store, never the service's database. Kept in a
 * SQLite file when one is given (so a restart forgets no token, charge or idempotency record),
 * else in an in-memory SQLite database. Reads hand out fresh copies: a handler that changes a
 * record saves it back.
 */
export class SandboxState {
  readonly #db: DatabaseSync;
  readonly #now: () => Date;

  /** `file` undefined keeps everything in memory. */
  constructor(now: () => Date, file?: string) {
    this.#now = now;
    if (file !== undefined) mkdirSync(path.dirname(file), { recursive: true });
    this.#db = new DatabaseSync(file ?? ':memory:', { timeout: 5000 });
    if (file !== undefined) this.#db.exec('pragma journal_mode = wal');
    this.#db.exec(SCHEMA);
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  nowSeconds(): number {
    return unixSeconds(this.#now());
  }

  nowMs(): number {
    return this.#now().getTime();
  }

  /** Every payment intent, newest first (tests inspect these). */
  listPaymentIntents(): PaymentIntent[] {
    const rows = this.#db.prepare('select body from payment_intents order by position desc').all();
    return rows.map((row) => JSON.parse(String(row.body)) as PaymentIntent);
  }

  getPaymentIntent(id: string): PaymentIntent | undefined {
    const row = this.#db.prepare('select body from payment_intents where id = ?').get(id);
    return row ? (JSON.parse(String(row.body)) as PaymentIntent) : undefined;
  }

  /** The list position of a payment intent (later ones are higher), for paging cursors. */
  paymentIntentPosition(id: string): number | undefined {
    const row = this.#db.prepare('select position from payment_intents where id = ?').get(id);
    return row ? Number(row.position) : undefined;
  }

  /** Up to `limit` intents past `position`: older ones newest first, or newer ones oldest first. */
  seekPaymentIntents({ position, direction, limit }: ListSeek): PaymentIntent[] {
    const older = direction === 'older';
    const bound = position ?? (older ? Number.MAX_SAFE_INTEGER : 0);
    const rows = this.#db
      .prepare(
        older
          ? 'select body from payment_intents where position < ? order by position desc limit ?'
          : 'select body from payment_intents where position > ? order by position asc limit ?',
      )
      .all(bound, limit);
    return rows.map((row) => JSON.parse(String(row.body)) as PaymentIntent);
  }

  savePaymentIntent(intent: PaymentIntent): void {
    this.#db
      .prepare(
        'insert into payment_intents (id, body) values (?, ?) on conflict (id) do update set body = excluded.body',
      )
      .run(intent.id, JSON.stringify(intent));
  }

  getGrantedToken(id: string): GrantedToken | undefined {
    return this.grantedTokenRecord(id)?.token;
  }

  /** The token's record, with expiry applied as of the sandbox clock. */
  grantedTokenRecord(id: string): GrantedTokenRecord | undefined {
    const row = this.#db.prepare('select test_payment_method, body from granted_tokens where id = ?').get(id);
    if (!row) return undefined;
    const testPaymentMethodId = String(row.test_payment_method);
    const testPaymentMethod = findTestPaymentMethod(testPaymentMethodId);
    if (!testPaymentMethod) throw new Error(`token ${id} names an unknown test payment method`);
    const token = JSON.parse(String(row.body)) as GrantedToken;
    deactivateIfExpired(token, this.nowSeconds());
    return { token, testPaymentMethodId, testPaymentMethod };
  }

  saveGrantedToken(record: GrantedTokenRecord): void {
    this.#db
      .prepare(
        `insert into granted_tokens (id, test_payment_method, body) values (?, ?, ?)
         on conflict (id) do update set body = excluded.body`,
      )
      .run(record.token.id, record.testPaymentMethodId, JSON.stringify(record.token));
  }

  keptResponse(key: string): KeptResponse | undefined {
    const row = this.#db.prepare('select body from idempotent_responses where key = ?').get(key);
    return row ? (JSON.parse(String(row.body)) as KeptResponse) : undefined;
  }

  keepResponse(key: string, response: KeptResponse): void {
    this.#db
      .prepare(
        'insert into idempotent_responses (key, body) values (?, ?) on conflict (key) do update set body = excluded.body',
      )
      .run(key, JSON.stringify(response));
  }

  forgetResponse(key: string): void {
    this.#db.prepare('delete from idempotent_responses where key = ?').run(key);
  }
}

function deactivateIfExpired(token: GrantedToken, nowSeconds: number): void {
  const expiresAt = token.usage_limits.expires_at;
  if (token.deactivated_reason !== null || expiresAt === null || nowSeconds < expiresAt) return;
  token.deactivated_reason = 'expired';
  token.deactivated_at = expiresAt;
}
