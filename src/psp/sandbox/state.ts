import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { unixSeconds } from './ids.ts';
import { findTestPaymentMethod, type TestPaymentMethod } from './test-cards.ts';
import type { CheckoutSession, GrantedToken, PaymentIntent } from './types.ts';

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

/** One priced line of a Checkout Session (from `line_items[n][price_data]`). */
export interface CheckoutLineItem {
  readonly name: string;
  readonly description: string | null;
  readonly quantity: number;
  readonly unitAmount: number;
}

/** A Checkout Session plus what the provider keeps about it without showing it on the object. */
export interface CheckoutSessionRecord {
  readonly session: CheckoutSession;
  readonly lineItems: readonly CheckoutLineItem[];
  readonly paymentIntentMetadata: Readonly<Record<string, string>>;
  /** A 3-D Secure card was entered on the hosted page and awaits the buyer's authentication. */
  pendingAuthentication: { readonly testPaymentMethodId: string; readonly email: string } | null;
}

export interface DeliveryAttempt {
  /** Unix seconds on the sandbox clock. */
  readonly attempted_at: number;
  readonly trigger: 'automatic' | 'resend';
  /** The endpoint's HTTP status, or null when no answer came. */
  readonly status: number | null;
  readonly error: string | null;
}

/** The delivery of one event to the configured webhook endpoint. */
export interface EventDeliveryRecord {
  readonly eventId: string;
  status: 'pending' | 'delivered' | 'failed';
  /** When the next automatic attempt is due (sandbox clock, ms); null once settled. */
  nextAttemptAtMs: number | null;
  readonly attempts: DeliveryAttempt[];
}

/** An event exactly as delivered (its JSON text is signed and sent byte for byte) with its delivery. */
export interface StoredEvent {
  readonly id: string;
  readonly payload: string;
  readonly delivery: EventDeliveryRecord | undefined;
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
  create table if not exists checkout_sessions (
    id text primary key,
    status text not null,
    expires_at integer not null,
    body text not null
  );
  create index if not exists checkout_sessions_open_by_expiry on checkout_sessions (status, expires_at);
  create table if not exists events (
    position integer primary key autoincrement,
    id text not null unique,
    payload text not null
  );
  create table if not exists event_deliveries (
    event_id text primary key references events (id),
    status text not null,
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
    if (file !== undefined) {
      // As the service's own SQLite: a commit survives the process (a restart forgets nothing);
      // only the operating system's crash can lose the last ones, and no fsync waits per request.
      this.#db.exec('pragma journal_mode = wal');
      this.#db.exec('pragma synchronous = normal');
    }
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

  checkoutSessionRecord(id: string): CheckoutSessionRecord | undefined {
    const row = this.#db.prepare('select body from checkout_sessions where id = ?').get(id);
    return row ? (JSON.parse(String(row.body)) as CheckoutSessionRecord) : undefined;
  }

  saveCheckoutSession(record: CheckoutSessionRecord): void {
    const { session } = record;
    this.#db
      .prepare(
        `insert into checkout_sessions (id, status, expires_at, body) values (?, ?, ?, ?)
         on conflict (id) do update set status = excluded.status, body = excluded.body`,
      )
      .run(session.id, session.status, session.expires_at, JSON.stringify(record));
  }

  /** Open sessions whose `expires_at` has come on the sandbox clock. */
  dueCheckoutSessionIds(): string[] {
    const rows = this.#db
      .prepare(
        "select id from checkout_sessions where status = 'open' and expires_at <= ? order by expires_at",
      )
      .all(this.nowSeconds());
    return rows.map((row) => String(row.id));
  }

  /** Stores a new event and, when there is an endpoint to send it to, its pending delivery. */
  insertEvent(id: string, payload: string, delivery: EventDeliveryRecord | undefined): void {
    this.atomically(() => {
      this.#db.prepare('insert into events (id, payload) values (?, ?)').run(id, payload);
      if (delivery) this.saveDelivery(delivery);
    });
  }

  /** Runs `work` as one unit of writes (nestable: a savepoint inside an outer one). */
  atomically<T>(work: () => T): T {
    this.#db.exec('savepoint sandbox_work');
    try {
      const result = work();
      this.#db.exec('release sandbox_work');
      return result;
    } catch (error) {
      this.#db.exec('rollback to sandbox_work');
      this.#db.exec('release sandbox_work');
      throw error;
    }
  }

  /** Every event, oldest first, with its delivery. */
  listEvents(): StoredEvent[] {
    const rows = this.#db
      .prepare(
        `select e.id, e.payload, d.body as delivery from events e
         left join event_deliveries d on d.event_id = e.id order by e.position`,
      )
      .all();
    return rows.map(storedEvent);
  }

  event(id: string): StoredEvent | undefined {
    const row = this.#db
      .prepare(
        `select e.id, e.payload, d.body as delivery from events e
         left join event_deliveries d on d.event_id = e.id where e.id = ?`,
      )
      .get(id);
    return row ? storedEvent(row) : undefined;
  }

  pendingDeliveries(): EventDeliveryRecord[] {
    const rows = this.#db
      .prepare(
        `select d.body from event_deliveries d join events e on e.id = d.event_id
         where d.status = 'pending' order by e.position`,
      )
      .all();
    return rows.map((row) => JSON.parse(String(row.body)) as EventDeliveryRecord);
  }

  saveDelivery(delivery: EventDeliveryRecord): void {
    this.#db
      .prepare(
        `insert into event_deliveries (event_id, status, body) values (?, ?, ?)
         on conflict (event_id) do update set status = excluded.status, body = excluded.body`,
      )
      .run(delivery.eventId, delivery.status, JSON.stringify(delivery));
  }
}

function storedEvent(row: Record<string, unknown>): StoredEvent {
  return {
    id: String(row.id),
    payload: String(row.payload),
    delivery: row.delivery === null ? undefined : (JSON.parse(String(row.delivery)) as EventDeliveryRecord),
  };
}

function deactivateIfExpired(token: GrantedToken, nowSeconds: number): void {
  const expiresAt = token.usage_limits.expires_at;
  if (token.deactivated_reason !== null || expiresAt === null || nowSeconds < expiresAt) return;
  token.deactivated_reason = 'expired';
  token.deactivated_at = expiresAt;
}
