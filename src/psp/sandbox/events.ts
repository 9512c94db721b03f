import { createHmac } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { invalidRequest, resourceMissing } from './errors.ts';
import { randomId } from './ids.ts';
import type { DeliveryAttempt, EventDeliveryRecord, SandboxState, StoredEvent } from './state.ts';
import type { CheckoutSession, SandboxEvent, SandboxEventType } from './types.ts';

export const EVENTS_CONTROL_PATH = '/_sandbox/events';
export const DEFAULT_WEBHOOK_SECRET = 'whsec_sandbox';
/** After each failed attempt: 1 s, 2 s, 4 s … capped at 60 s; ten attempts in all. */
export const DEFAULT_EVENT_RETRY_DELAYS_MS: readonly number[] = [
  1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000, 60_000,
];
const ATTEMPT_TIMEOUT_MS = 10_000;
const CLOSE_GRACE_MS = 1000;
const SWEEP_INTERVAL_MS = 1000;
const USER_AGENT = 'Stripe/1.0 (+https://stripe.com/docs/webhooks)';

/** The one place the sandbox sends events to. */
export interface WebhookEndpoint {
  readonly url: string;
  /** The signing secret (`whsec_…`) the receiver verifies `Stripe-Signature` with. */
  readonly secret: string;
}

export interface SandboxEventsOptions {
  readonly endpoint: WebhookEndpoint | undefined;
  /** The wait after each failed automatic attempt; one more attempt than delays. */
  readonly retryDelaysMs: readonly number[];
  readonly apiVersion: string;
  /** Where failures of the sandbox itself go (a broken store), since no request is there to answer. */
  readonly reportError: (error: unknown) => void;
}

export interface DeliveryView {
  readonly status: EventDeliveryRecord['status'];
  /** Sandbox clock, ms; null once delivered or given up. */
  readonly next_attempt_at_ms: number | null;
  readonly attempts: readonly DeliveryAttempt[];
}

/** An event with its delivery (null when no endpoint was configured when it happened). */
export interface EventWithDelivery {
  readonly event: SandboxEvent;
  readonly delivery: DeliveryView | null;
}

/**
 * The provider's events and their delivery to the configured webhook endpoint: signed like the
 * provider signs them, retried with backoff until a 2xx answer, kept in the sandbox state so a
 * restart resumes what was still due. Also runs the sweeps of things that fall due on the sandbox
 * clock (a Checkout Session reaching `expires_at`), since they emit events.
 */
export class SandboxEvents {
  readonly #state: SandboxState;
  readonly #options: SandboxEventsOptions;
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #inFlight = new Set<Promise<unknown>>();
  /** Events with an automatic attempt under way (a resend may still run beside it). */
  readonly #attempting = new Set<string>();
  readonly #sweeps: (() => void)[] = [];
  readonly #abort = new AbortController();
  #sweepTimer: NodeJS.Timeout | undefined;
  #paused = false;
  #closing = false;
  #closed = false;

  constructor(state: SandboxState, options: SandboxEventsOptions) {
    this.#state = state;
    this.#options = options;
  }

  /** Resumes the deliveries still pending in the store and starts the periodic sweeps. */
  start(): void {
    this.#sweepTimer = setInterval(() => this.#runSweeps(), SWEEP_INTERVAL_MS).unref();
    this.#scheduleAllPending();
  }

  /** Work due on the sandbox clock, run every second and before a flush. */
  addSweep(sweep: () => void): void {
    this.#sweeps.push(sweep);
  }

  emit(type: SandboxEventType, object: CheckoutSession): SandboxEvent {
    const { endpoint, apiVersion } = this.#options;
    const event: SandboxEvent = {
      id: randomId('evt'),
      object: 'event',
      api_version: apiVersion,
      created: this.#state.nowSeconds(),
      livemode: false,
      pending_webhooks: endpoint ? 1 : 0,
      request: { id: null, idempotency_key: null },
      type,
      data: { object },
    };
    const delivery: EventDeliveryRecord | undefined = endpoint
      ? { eventId: event.id, status: 'pending', nextAttemptAtMs: this.#state.nowMs(), attempts: [] }
      : undefined;
    this.#state.insertEvent(event.id, JSON.stringify(event, null, 2), delivery);
    if (delivery) this.#schedule(event.id, 0);
    return event;
  }

  /** Every event, oldest first, with its delivery attempts. */
  list(): EventWithDelivery[] {
    return this.#state.listEvents().map(withDelivery);
  }

  /** Delivers the event again now (even while paused): the same id and body, a fresh signature. */
  async resend(id: string): Promise<EventWithDelivery> {
    const stored = this.#state.event(id);
    if (!stored) throw resourceMissing('event', id, { status: 404 });
    if (!this.#options.endpoint || !stored.delivery) {
      throw invalidRequest('The PSP sandbox has no webhook endpoint to send this event to.');
    }
    if (this.#closing) throw invalidRequest('The PSP sandbox is shutting down.', { status: 503 });
    await this.#deliver(id, 'resend');
    return withDelivery(this.#state.event(id) ?? stored);
  }

  /** Holds automatic deliveries (events keep being recorded) until `resume`. */
  pause(): void {
    this.#paused = true;
    this.#clearTimers();
  }

  resume(): void {
    this.#paused = false;
    this.#scheduleAllPending();
  }

  get paused(): boolean {
    return this.#paused;
  }

  /**
   * Runs the sweeps, sends every delivery that is due now (unless paused) and waits until all
   * deliveries under way are answered. A retry waiting out its backoff is not due yet.
   */
  async flush(): Promise<void> {
    this.#runSweeps();
    if (!this.#paused && !this.#closing) {
      const now = this.#state.nowMs();
      for (const delivery of this.#state.pendingDeliveries()) {
        if ((delivery.nextAttemptAtMs ?? now) <= now) {
          this.#clearTimer(delivery.eventId);
          this.#automatic(delivery.eventId);
        }
      }
    }
    await Promise.all(this.#inFlight);
  }

  /** Stops timers, gives deliveries under way a moment to be answered, then cancels the rest. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#sweepTimer);
    this.#clearTimers();
    const settled = Promise.all(this.#inFlight);
    let grace: NodeJS.Timeout | undefined;
    await Promise.race([settled, new Promise((resolve) => (grace = setTimeout(resolve, CLOSE_GRACE_MS)))]);
    clearTimeout(grace);
    // From here on nothing is written: an attempt cut short stays pending for the next start.
    this.#closed = true;
    this.#abort.abort();
    await settled;
  }

  #runSweeps(): void {
    if (this.#closing) return;
    for (const sweep of this.#sweeps) {
      try {
        sweep();
      } catch (error) {
        this.#options.reportError(error);
      }
    }
  }

  #scheduleAllPending(): void {
    if (this.#paused || this.#closing || !this.#options.endpoint) return;
    const now = this.#state.nowMs();
    for (const delivery of this.#state.pendingDeliveries()) {
      this.#schedule(delivery.eventId, Math.max(0, (delivery.nextAttemptAtMs ?? now) - now));
    }
  }

  #schedule(id: string, delayMs: number): void {
    if (this.#paused || this.#closing) return;
    this.#clearTimer(id);
    const timer = setTimeout(() => {
      this.#timers.delete(id);
      this.#automatic(id);
    }, delayMs);
    this.#timers.set(id, timer.unref());
  }

  #clearTimer(id: string): void {
    clearTimeout(this.#timers.get(id));
    this.#timers.delete(id);
  }

  #clearTimers(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  #automatic(id: string): void {
    if (this.#paused || this.#closing || this.#attempting.has(id)) return;
    this.#attempting.add(id);
    this.#deliver(id, 'automatic')
      .catch((error: unknown) => this.#options.reportError(error))
      .finally(() => this.#attempting.delete(id));
  }

  #deliver(id: string, trigger: DeliveryAttempt['trigger']): Promise<void> {
    const attempt = this.#post(id, trigger);
    const tracked = attempt.catch(() => undefined);
    this.#inFlight.add(tracked);
    void tracked.finally(() => this.#inFlight.delete(tracked));
    return attempt;
  }

  async #post(id: string, trigger: DeliveryAttempt['trigger']): Promise<void> {
    const { endpoint } = this.#options;
    const stored = this.#state.event(id);
    if (!endpoint || !stored) return;
    const attemptedAt = this.#state.nowSeconds();
    let status: number | null = null;
    let error: string | null = null;
    try {
      // Redirects are not followed: the sandbox sends events to the configured URL and nowhere else.
      const response = await fetch(endpoint.url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/json; charset=utf-8',
          'user-agent': USER_AGENT,
          'stripe-signature': signatureHeader(stored.payload, endpoint.secret, attemptedAt),
        },
        body: stored.payload,
        signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]),
      });
      status = response.status;
      await response.body?.cancel();
    } catch (cause) {
      error = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    }
    if (this.#closed) return;
    this.#record(id, { attempted_at: attemptedAt, trigger, status, error });
  }

  #record(id: string, attempt: DeliveryAttempt): void {
    const delivery = this.#state.event(id)?.delivery;
    if (!delivery) return;
    delivery.attempts.push(attempt);
    const succeeded = attempt.status !== null && attempt.status >= 200 && attempt.status < 300;
    if (delivery.status === 'pending' && succeeded) {
      delivery.status = 'delivered';
      delivery.nextAttemptAtMs = null;
      this.#clearTimer(id);
    } else if (delivery.status === 'pending' && attempt.trigger === 'automatic') {
      const failures = delivery.attempts.filter((each) => each.trigger === 'automatic').length;
      const delayMs = this.#options.retryDelaysMs[failures - 1];
      if (delayMs === undefined) {
        delivery.status = 'failed';
        delivery.nextAttemptAtMs = null;
      } else {
        delivery.nextAttemptAtMs = this.#state.nowMs() + delayMs;
        this.#schedule(id, delayMs);
      }
    }
    this.#state.saveDelivery(delivery);
  }
}

/** `Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`, the provider's scheme. */
export function signatureHeader(payload: string, secret: string, timestamp: number): string {
  const signature = createHmac('sha256', secret).update(`${timestamp}.${payload}`, 'utf8').digest('hex');
  return `t=${timestamp},v1=${signature}`;
}

function withDelivery(stored: StoredEvent): EventWithDelivery {
  const { delivery } = stored;
  return {
    event: JSON.parse(stored.payload) as SandboxEvent,
    delivery: delivery
      ? { status: delivery.status, next_attempt_at_ms: delivery.nextAttemptAtMs, attempts: delivery.attempts }
      : null,
  };
}

/** Test controls: the events with their attempts, resending one, holding and releasing deliveries. */
export function registerEventRoutes(app: FastifyInstance, events: SandboxEvents): void {
  app.get(EVENTS_CONTROL_PATH, async () => ({
    object: 'list',
    url: EVENTS_CONTROL_PATH,
    data: events.list(),
    has_more: false,
  }));
  app.post<{ Params: { readonly id: string } }>(`${EVENTS_CONTROL_PATH}/:id/resend`, async (request) =>
    events.resend(request.params.id),
  );
  app.post(`${EVENTS_CONTROL_PATH}/deliveries/pause`, async () => {
    events.pause();
    return deliveriesResource(events);
  });
  app.post(`${EVENTS_CONTROL_PATH}/deliveries/resume`, async () => {
    events.resume();
    return deliveriesResource(events);
  });
}

function deliveriesResource(events: SandboxEvents) {
  return { object: 'sandbox.event_deliveries', paused: events.paused };
}
