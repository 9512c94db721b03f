import { findSellableItem, type PlanId, type TermLength } from '../catalog/index.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { InstanceLiveness } from '../instances/index.ts';
import type { PaymentProvider } from '../psp/index.ts';
import { type Clock, HOUR_MS } from '../shared/clock.ts';
import { sha256Hex } from '../shared/ids.ts';
import { provisionWorkspace } from '../workspace/index.ts';
import {
  type Attempt,
  claimCharge,
  claimProvisioning,
  findAttempt,
  findAttemptByKey,
  findOrder,
  insertOrder,
  type OrderRow,
  recordAttempt,
  setAsideForReview,
  updatePendingAttempt,
} from './attempts.ts';
import { type Failpoints, noFailpoints, SimulatedCrash } from './failpoints.ts';
import type { OrderLinks } from './order-links.ts';
import type { AttemptStatus } from './purchase.table.ts';

/**
 * The provider keeps idempotency keys for at least 24 hours; past that, asking again under the
 * same key could charge anew, so an attempt still pending this long after it was recorded is never
 * sent to the provider again: it is set aside for a person to review.
 */
export const IDEMPOTENCY_WINDOW_MS = 23 * HOUR_MS;

/** Business lines carry `event` (see docs/operations.md); buyers' addresses never appear. */
export interface PurchaseLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface PurchaseDeps {
  db: Db;
  clock: Clock;
  psp: PaymentProvider;
  baseUrl: string;
  /** The order page's links, which the channels publish with every completed purchase. */
  orderLinks: OrderLinks;
  logger: PurchaseLogger;
  failpoints?: Failpoints;
  /** How long one request may hold an attempt while it calls the provider (SDK timeout x retries). */
  chargeLeaseMs?: number;
  /** This instance, named in the charge leases it takes; a gone holder's lease is taken over at once. */
  instance?: InstanceLiveness;
}

export interface Buyer {
  email: string;
  name?: string;
  companyName?: string;
}

export interface PurchaseRequest {
  /** Derived by the channel from its own handle: session and attempt number, or MPP challenge id. */
  attemptKey: string;
  channel: 'acp' | 'ucp' | 'mpp';
  itemId: string;
  buyer: Buyer;
  /** The shared payment token. */
  token: string;
}

export interface Order {
  id: string;
  channel: string;
  itemId: string;
  plan: PlanId;
  term: TermLength;
  amount: number;
  currency: 'usd';
  buyerEmail: string;
  paymentIntentId: string;
  workspaceId: string;
  termStartsAt: Date;
  termEndsAt: Date;
  createdAt: Date;
}

/** Every way a purchase can end; channels translate these into their wire formats. */
export type PurchaseOutcome =
  | { kind: 'completed'; order: Order }
  | { kind: 'declined'; code: string; message: string }
  /** Another request is charging this attempt right now. */
  | { kind: 'in_progress'; retryAfterSeconds: number }
  /** The provider could not be reached or answered ambiguously; repeat the same request. */
  | { kind: 'payment_unknown'; retryAfterSeconds: number }
  /** The money is taken but the workspace is not set up yet; repeating the request finishes it. */
  | { kind: 'setup_pending'; retryAfterSeconds: number }
  /** The provider refused the request itself (not the card); nothing was charged. */
  | { kind: 'failed'; message: string }
  /**
   * The outcome was still unknown when the provider's idempotency window closed; the attempt is
   * never sent again and a person settles it (it may have been charged).
   */
  | { kind: 'needs_review' }
  | { kind: 'rejected'; code: 'unknown_item' | 'not_sellable' | 'attempt_conflict'; message: string };

const DEFAULT_CHARGE_LEASE_MS = 90_000;

/**
 * The one purchase pipeline of all three channels: record the attempt, charge it once under a
 * deterministic idempotency key, record the outcome, then provision order, workspace, invitation
 * and email in one transaction. Every step is idempotent, so repeating the request (or
 * `resumePurchase`) after a crash anywhere finishes the purchase without a second charge.
 */
export async function purchase(deps: PurchaseDeps, request: PurchaseRequest): Promise<PurchaseOutcome> {
  const recorded = await recordPurchase(deps.db, deps.clock.now(), request);
  if (recorded.kind === 'rejected') return recorded;
  await failpoints(deps).hit('after_attempt_recorded');
  return advance(deps, recorded.attempt, request.token);
}

type Rejected = Extract<PurchaseOutcome, { kind: 'rejected' }>;

/** An attempt as `recordPurchase` recorded it, to be charged with `resumePurchase`. */
export type RecordedAttempt = Attempt;

/**
 * The pipeline's first two steps alone: price the item and record the attempt, without charging.
 * Given a transaction, the attempt commits together with the caller's own claim on what is being
 * paid for (a checkout session); `resumePurchase` then charges it.
 */
export async function recordPurchase(
  db: Db,
  at: Date,
  request: PurchaseRequest,
): Promise<{ kind: 'recorded'; attempt: Attempt } | Rejected> {
  const found = findSellableItem(request.itemId);
  if (!found.ok) {
    const message =
      found.error.code === 'unknown_item' ? `No item ${request.itemId} is for sale.` : found.error.reason;
    return { kind: 'rejected', code: found.error.code, message };
  }
  const attempt = await recordAttempt(db, at, {
    attemptKey: request.attemptKey,
    channel: request.channel,
    item: found.value,
    buyer: request.buyer,
    token: request.token,
  });
  if (attempt.item_id !== request.itemId || attempt.token_hash !== sha256Hex(request.token)) {
    return {
      kind: 'rejected',
      code: 'attempt_conflict',
      message: 'This payment attempt was already made with another item or token.',
    };
  }
  return { kind: 'recorded', attempt };
}

/** How a purchase ended for good: nothing about it will change any more. */
export type SettledOutcome = Extract<PurchaseOutcome, { kind: 'completed' | 'declined' | 'failed' }>;

/** What is known of an attempt, read without acting on it. */
export interface AttemptState {
  status: AttemptStatus;
  /**
   * The end of the provider's idempotency window, counted from when the attempt was recorded:
   * until then the attempt may be charged (again) under its key; past it, one still pending is
   * never sent again and a person settles it.
   */
  windowEndsAt: Date;
  /** SHA-256 of the token the attempt pays with. */
  tokenHash: string;
  /** The final outcome; undefined while pending, charged or set aside for review. */
  settled: SettledOutcome | undefined;
}

/** The status of the attempt recorded under `attemptKey` (one query); undefined if there is none. */
export async function attemptStatus(db: Db, attemptKey: string): Promise<AttemptStatus | undefined> {
  return (await findAttemptByKey(db, attemptKey))?.status;
}

/** The attempt recorded under `attemptKey`, or undefined if there is none. */
export async function attemptState(db: Db, attemptKey: string): Promise<AttemptState | undefined> {
  const attempt = await findAttemptByKey(db, attemptKey);
  if (!attempt) return undefined;
  const { status } = attempt;
  const settled =
    status === 'completed' || status === 'declined' || status === 'failed'
      ? await finalOutcome(db, attempt, status)
      : undefined;
  return { status, windowEndsAt: new Date(windowEnd(attempt)), tokenHash: attempt.token_hash, settled };
}

export async function getOrder(db: Db, orderId: string): Promise<Order | undefined> {
  const row = await findOrder(db, orderId);
  return row ? toOrder(row) : undefined;
}

/**
 * Charges (or finishes) a recorded attempt from what was recorded: the one recorded under
 * `attemptKey` (an interrupted purchase), or the one the caller has just recorded with
 * `recordPurchase`, which is not read again. Undefined if no attempt is recorded under the key.
 */
export async function resumePurchase(
  deps: PurchaseDeps,
  attempt: string | RecordedAttempt,
): Promise<PurchaseOutcome | undefined> {
  const recorded = typeof attempt === 'string' ? await findAttemptByKey(deps.db, attempt) : attempt;
  return recorded ? advance(deps, recorded, recorded.token) : undefined;
}

/** The end of the provider's idempotency window for `attempt` (epoch ms). */
function windowEnd(attempt: Attempt): number {
  return attempt.created_at + IDEMPOTENCY_WINDOW_MS;
}

async function advance(deps: PurchaseDeps, attempt: Attempt, token: string | null): Promise<PurchaseOutcome> {
  switch (attempt.status) {
    case 'completed':
    case 'declined':
    case 'failed':
      return finalOutcome(deps.db, attempt, attempt.status);
    case 'charged':
      return provision(deps, attempt);
    case 'needs_review':
      return { kind: 'needs_review' };
    case 'pending':
      if (windowEnd(attempt) <= deps.clock.now().getTime()) {
        return setAside(deps, attempt);
      }
      if (token === null) throw new Error(`pending attempt ${attempt.id} has no token to charge`);
      return charge(deps, attempt, token);
  }
}

/** An attempt past the provider's idempotency window is never charged again; a person settles it. */
async function setAside(deps: PurchaseDeps, attempt: Attempt): Promise<PurchaseOutcome> {
  if (await setAsideForReview(deps.db, attempt.id, deps.clock.now().getTime())) {
    deps.logger.error(
      { attemptId: attempt.id, attemptKey: attempt.attempt_key },
      'payment outcome still unknown past the provider idempotency window; set aside for review, never charged again',
    );
    return { kind: 'needs_review' };
  }
  const current = await findAttempt(deps.db, attempt.id);
  if (current && current.status !== 'pending') return advance(deps, current, null);
  // A request still holds the attempt: it called the provider inside the window.
  return { kind: 'in_progress', retryAfterSeconds: 1 };
}

async function finalOutcome(
  db: Db,
  attempt: Attempt,
  status: 'completed' | 'declined' | 'failed',
): Promise<SettledOutcome> {
  switch (status) {
    case 'completed':
      return completedOutcome(db, attempt);
    case 'declined':
      return {
        kind: 'declined',
        code: attempt.decline_code ?? 'card_declined',
        message: attempt.decline_message ?? '',
      };
    case 'failed':
      return { kind: 'failed', message: attempt.last_error ?? 'The payment provider refused the request.' };
  }
}

async function charge(deps: PurchaseDeps, attempt: Attempt, token: string): Promise<PurchaseOutcome> {
  const leaseMs = deps.chargeLeaseMs ?? DEFAULT_CHARGE_LEASE_MS;
  const now = deps.clock.now().getTime();
  if (!(await claimCharge(deps.db, attempt.id, { now, until: now + leaseMs, instance: deps.instance }))) {
    return { kind: 'in_progress', retryAfterSeconds: 1 };
  }
  const outcome = await deps.psp.charge({
    amount: attempt.amount,
    currency: attempt.currency,
    token,
    idempotencyKey: attempt.psp_idempotency_key,
    metadata: {
      order_id: attempt.order_id,
      payment_attempt_id: attempt.id,
      channel: attempt.channel,
      item_id: attempt.item_id,
    },
  });
  await failpoints(deps).hit('after_charge');
  const at = deps.clock.now().getTime();

  switch (outcome.status) {
    case 'succeeded': {
      const recorded = await updatePendingAttempt(deps.db, attempt.id, at, {
        status: 'charged',
        payment_intent_id: outcome.paymentIntentId,
        charged_at: at,
        token: null,
        last_error: null,
      });
      await failpoints(deps).hit('after_charge_recorded');
      const charged = recorded ?? (await findAttempt(deps.db, attempt.id));
      if (!charged) throw new Error(`payment attempt ${attempt.id} vanished`);
      return advance(deps, charged, null);
    }
    case 'declined':
      await updatePendingAttempt(deps.db, attempt.id, at, {
        status: 'declined',
        decline_code: outcome.declineCode,
        decline_message: outcome.message,
        token: null,
      });
      logDecline(deps, attempt, outcome.declineCode);
      return { kind: 'declined', code: outcome.declineCode, message: outcome.message };
    case 'requires_action': {
      const message = 'The card requires 3-D Secure authentication, which this checkout cannot perform.';
      await updatePendingAttempt(deps.db, attempt.id, at, {
        status: 'declined',
        decline_code: 'requires_3ds',
        decline_message: message,
        token: null,
      });
      logDecline(deps, attempt, 'requires_3ds');
      return { kind: 'declined', code: 'requires_3ds', message };
    }
    case 'failed':
      if (outcome.retryable) {
        deps.logger.warn(
          {
            event: 'payment.unknown',
            attemptId: attempt.id,
            orderId: attempt.order_id,
            reason: outcome.reason,
          },
          'charge outcome unknown; will retry',
        );
        await updatePendingAttempt(deps.db, attempt.id, at, { last_error: outcome.reason });
        return { kind: 'payment_unknown', retryAfterSeconds: 2 };
      }
      deps.logger.error(
        { event: 'payment.failed', attemptId: attempt.id, orderId: attempt.order_id, reason: outcome.reason },
        'payment provider refused the request',
      );
      await updatePendingAttempt(deps.db, attempt.id, at, {
        status: 'failed',
        last_error: outcome.reason,
        token: null,
      });
      return { kind: 'failed', message: 'The payment provider refused the request; nothing was charged.' };
  }
}

/** Order, workspace, invitation and email in one transaction; idempotent on the attempt. */
async function provision(deps: PurchaseDeps, attempt: Attempt): Promise<PurchaseOutcome> {
  const { db, clock } = deps;
  let provisioned: OrderRow | undefined;
  try {
    provisioned = await inTransaction(db, async (trx) => {
      const now = clock.now().getTime();
      if (!(await claimProvisioning(trx, attempt.id, now))) return undefined;
      if (attempt.payment_intent_id === null || attempt.charged_at === null) {
        throw new Error(`charged attempt ${attempt.id} has no payment intent`);
      }
      const { workspace } = await provisionWorkspace(
        trx,
        {
          name: workspaceName(attempt),
          plan: attempt.plan,
          ownerEmail: attempt.buyer_email,
          term: {
            term: attempt.term,
            startsAt: new Date(attempt.charged_at),
            channel: attempt.channel,
            orderId: attempt.order_id,
          },
        },
        { clock, baseUrl: deps.baseUrl },
      );
      const term = workspace.currentTerm;
      if (!term) throw new Error(`workspace ${workspace.id} was provisioned without a term`);
      const order: OrderRow = {
        id: attempt.order_id,
        attempt_id: attempt.id,
        channel: attempt.channel,
        item_id: attempt.item_id,
        plan: attempt.plan,
        term: attempt.term,
        amount: attempt.amount,
        currency: attempt.currency,
        buyer_email: attempt.buyer_email,
        payment_intent_id: attempt.payment_intent_id,
        workspace_id: workspace.id,
        term_starts_at: term.startsAt.getTime(),
        term_ends_at: term.endsAt.getTime(),
        page_key_hash: null,
        created_at: now,
      };
      await insertOrder(trx, order);
      await failpoints(deps).hit('before_provisioning_commit');
      return order;
    });
  } catch (error) {
    if (error instanceof SimulatedCrash) throw error;
    deps.logger.error(
      { event: 'purchase.setup_pending', err: error, attemptId: attempt.id, orderId: attempt.order_id },
      'provisioning failed after the charge; will retry',
    );
    return { kind: 'setup_pending', retryAfterSeconds: 2 };
  }
  if (provisioned) {
    deps.logger.info(
      {
        event: 'order.completed',
        orderId: attempt.order_id,
        workspaceId: provisioned.workspace_id,
        channel: attempt.channel,
        itemId: attempt.item_id,
        amount: attempt.amount,
        currency: attempt.currency,
        attemptId: attempt.id,
        paymentIntentId: attempt.payment_intent_id,
      },
      'order completed',
    );
  }
  await failpoints(deps).hit('after_provisioning');
  // The order this request wrote is the attempt's outcome; otherwise another request wrote it.
  if (provisioned) return { kind: 'completed', order: toOrder(provisioned) };
  const current = await findAttempt(db, attempt.id);
  return current?.status === 'completed'
    ? completedOutcome(db, current)
    : { kind: 'setup_pending', retryAfterSeconds: 1 };
}

async function completedOutcome(
  db: Db,
  attempt: Attempt,
): Promise<Extract<PurchaseOutcome, { kind: 'completed' }>> {
  const order = await findOrder(db, attempt.order_id);
  if (!order) throw new Error(`completed attempt ${attempt.id} has no order`);
  return { kind: 'completed', order: toOrder(order) };
}

export function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    channel: row.channel,
    itemId: row.item_id,
    plan: row.plan,
    term: row.term,
    amount: row.amount,
    currency: row.currency,
    buyerEmail: row.buyer_email,
    paymentIntentId: row.payment_intent_id,
    workspaceId: row.workspace_id,
    termStartsAt: new Date(row.term_starts_at),
    termEndsAt: new Date(row.term_ends_at),
    createdAt: new Date(row.created_at),
  };
}

function logDecline(deps: PurchaseDeps, attempt: Attempt, code: string): void {
  deps.logger.info(
    {
      event: 'payment.declined',
      code,
      attemptId: attempt.id,
      orderId: attempt.order_id,
      channel: attempt.channel,
      itemId: attempt.item_id,
      amount: attempt.amount,
      currency: attempt.currency,
    },
    'payment declined',
  );
}

function workspaceName(attempt: Attempt): string {
  if (attempt.company_name) return attempt.company_name;
  if (attempt.buyer_name) return `${attempt.buyer_name}'s workspace`;
  return `Workspace for ${attempt.buyer_email}`;
}

function failpoints(deps: PurchaseDeps): Failpoints {
  return deps.failpoints ?? noFailpoints;
}
