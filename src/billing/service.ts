import type { Selectable } from 'kysely';
import { recordAuditEvent, userActor } from '../audit/index.ts';
import {
  type CatalogError,
  findSellableItem,
  PLANS,
  type PlanId,
  type TermLength,
} from '../catalog/index.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import {
  type CheckoutProvider,
  type CheckoutSessionSummary,
  ProviderUnavailableError,
} from '../psp/index.ts';
import { getOrder, type Order, recordPaidAppOrder } from '../purchase/index.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { addPaidTerm } from '../workspace/index.ts';
import type { BillingCheckoutsTable } from './billing.table.ts';

/** Business lines carry `event` (docs/operations.md); buyers' addresses never appear. */
export interface BillingLogger {
  info(object: object, message: string): void;
  warn(object: object, message: string): void;
  error(object: object, message: string): void;
}

export interface BillingDeps {
  db: Db;
  clock: Clock;
  psp: CheckoutProvider;
  /** The service's public address: where the provider sends the person back. */
  baseUrl: string;
  logger: BillingLogger;
}

export type CheckoutRow = Selectable<BillingCheckoutsTable>;

/** A checkout started on the Billing page, as the pages show it. */
export interface BillingCheckout {
  providerCheckoutId: string;
  workspaceId: string;
  itemId: string;
  plan: PlanId;
  term: TermLength;
  amount: number;
  status: CheckoutRow['status'];
  orderId: string | null;
}

export type StartCheckoutError =
  | CatalogError
  /** The provider could not be reached or failed on its side: trying again later may work. */
  | { code: 'provider_unavailable' }
  /** The provider refused the request (our credentials or parameters): trying again will not help. */
  | { code: 'provider_refused' };

export interface StartCheckoutInput {
  workspaceId: string;
  itemId: string;
  startedBy: { id: string; email: string };
}

/**
 * Starts a hosted checkout for one catalog item (a plan term) for this workspace: creates the
 * provider's session at the catalog's price and records it. The person's earlier checkouts of
 * this workspace that are still open are ended at the provider, so one person cannot pay twice
 * by going back and choosing again, nor by choosing in two tabs at once (the newest stays).
 * Answers the provider's page to send the person to.
 */
export async function startCheckout(
  deps: BillingDeps,
  input: StartCheckoutInput,
): Promise<Result<{ url: string; providerCheckoutId: string }, StartCheckoutError>> {
  const found = findSellableItem(input.itemId);
  if (!found.ok) return found;
  const item = found.value;
  const now = deps.clock.now();
  const id = newId('bco', now);
  const billing = `${deps.baseUrl}/w/${encodeURIComponent(input.workspaceId)}/billing`;
  let session: CheckoutSessionSummary;
  try {
    session = await deps.psp.createCheckoutSession({
      amount: item.price.amount,
      currency: item.price.currency,
      name: `${PLANS[item.price.plan].name}, one ${item.price.term}`,
      description: item.description,
      successUrl: `${billing}/return?checkout={CHECKOUT_SESSION_ID}`,
      cancelUrl: billing,
      clientReferenceId: input.workspaceId,
      customerEmail: input.startedBy.email,
      metadata: { workspace_id: input.workspaceId, item_id: item.id },
      idempotencyKey: `svc_${id}`,
    });
  } catch (error) {
    const code = error instanceof ProviderUnavailableError ? 'provider_unavailable' : 'provider_refused';
    deps.logger.error(
      { event: 'billing.checkout_failed', err: error, code, workspaceId: input.workspaceId, itemId: item.id },
      'the provider did not create the checkout',
    );
    return err({ code });
  }
  if (!session.url) throw new Error(`the provider's new checkout ${session.id} has no page`);
  await deps.db
    .insertInto('billing_checkouts')
    .values({
      id,
      provider_checkout_id: session.id,
      workspace_id: input.workspaceId,
      item_id: item.id,
      plan: item.price.plan,
      term: item.price.term,
      amount: item.price.amount,
      currency: item.price.currency,
      started_by_user_id: input.startedBy.id,
      started_by_email: input.startedBy.email,
      status: 'open',
      order_id: null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    })
    .execute();
  // Read after this one is recorded, so of two started at once the later reader sees both; both
  // agree which is newest (creation time, then id), and every other open one is ended.
  const [, ...earlier] = await deps.db
    .selectFrom('billing_checkouts')
    .select('provider_checkout_id')
    .where('workspace_id', '=', input.workspaceId)
    .where('started_by_user_id', '=', input.startedBy.id)
    .where('status', '=', 'open')
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  for (const { provider_checkout_id } of earlier) await expireEarlierCheckout(deps, provider_checkout_id);
  deps.logger.info(
    {
      event: 'billing.checkout_started',
      workspaceId: input.workspaceId,
      itemId: item.id,
      checkoutId: session.id,
    },
    'checkout started',
  );
  return ok({ url: session.url, providerCheckoutId: session.id });
}

/**
 * Ends an earlier open checkout at the provider. Not open any more means paid or expired: its
 * event (or return page) settles it. When the provider fails, the new checkout goes ahead: the
 * earlier one stays open in our record, so the next choice tries again, and if it is paid
 * meanwhile, it is fulfilled like any other (the money is taken, the term is owed).
 */
async function expireEarlierCheckout(deps: BillingDeps, providerCheckoutId: string): Promise<void> {
  let ended: CheckoutSessionSummary | undefined;
  try {
    ended = await deps.psp.expireCheckoutSession(providerCheckoutId);
  } catch (error) {
    deps.logger.warn(
      { event: 'billing.checkout_expire_failed', err: error, checkoutId: providerCheckoutId },
      'the provider did not end an earlier checkout; it stays open',
    );
    return;
  }
  if (ended?.status === 'expired') await markCheckoutExpired(deps, ended);
}

export type FulfilError =
  /** No checkout of ours has this id. */
  | { code: 'unknown_checkout' }
  /** The provider has not taken the money (yet). */
  | { code: 'not_paid' }
  /** The paid session disagrees with what was started (amount, currency, workspace, item). */
  | { code: 'mismatch'; reason: string };

export interface Fulfilment {
  order: Order;
  /** False when an earlier call (the event or the return page) fulfilled it already. */
  fulfilledNow: boolean;
}

/**
 * Applies a paid checkout exactly once, keyed on the provider's checkout id: in one transaction
 * the row is claimed with a conditional update (a concurrent or later call finds it claimed and
 * answers the order already made), the order is recorded (channel `app`) and the term added to
 * the workspace. A paid session that disagrees with the checkout as started changes nothing.
 */
export async function fulfilCheckout(
  deps: BillingDeps,
  session: CheckoutSessionSummary,
): Promise<Result<Fulfilment, FulfilError>> {
  const row = await findCheckout(deps.db, session.id);
  if (!row) return err({ code: 'unknown_checkout' });
  if (row.status === 'fulfilled' && row.order_id) return ok(await fulfilledOrder(deps.db, row.order_id));
  if (!session.paid || !session.paymentIntentId) return err({ code: 'not_paid' });
  const mismatch = disagreement(row, session);
  if (mismatch) {
    deps.logger.warn(
      {
        event: 'billing.checkout_mismatch',
        checkoutId: session.id,
        workspaceId: row.workspace_id,
        reason: mismatch,
      },
      'a paid checkout disagrees with the one started; nothing applied',
    );
    return err({ code: 'mismatch', reason: mismatch });
  }
  const paymentIntentId = session.paymentIntentId;
  const outcome = await inTransaction(deps.db, async (trx) => {
    const now = deps.clock.now();
    const orderId = newId('ord', now);
    // Paid wins over an expiry seen earlier: the money is taken, so the term is owed.
    const claimed = await trx
      .updateTable('billing_checkouts')
      .set({ status: 'fulfilled', order_id: orderId, updated_at: now.getTime() })
      .where('provider_checkout_id', '=', session.id)
      .where('status', 'in', ['open', 'expired'])
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n) return undefined;
    const added = await addPaidTerm(
      trx,
      { workspaceId: row.workspace_id, plan: row.plan, term: row.term, channel: 'app', orderId, at: now },
      { clock: deps.clock, baseUrl: deps.baseUrl },
    );
    const order = await recordPaidAppOrder(trx, {
      orderId,
      checkoutId: session.id,
      itemId: row.item_id,
      plan: row.plan,
      term: row.term,
      amount: row.amount,
      currency: row.currency,
      buyerEmail: row.started_by_email,
      paymentIntentId,
      workspaceId: row.workspace_id,
      termStartsAt: added.term.startsAt,
      termEndsAt: added.term.endsAt,
      at: now,
    });
    await recordAuditEvent(trx, {
      workspaceId: row.workspace_id,
      actor: userActor({ id: row.started_by_user_id, email: row.started_by_email }),
      action: 'plan.purchased',
      target: {
        type: 'order',
        id: orderId,
        label: `${PLANS[row.plan].name}, one ${row.term}${added.startsNow ? '' : ' (next term)'}`,
      },
      at: now,
    });
    return { order, startsNow: added.startsNow };
  });
  if (!outcome) {
    const claimed = await findCheckout(deps.db, session.id);
    if (!claimed?.order_id) throw new Error(`checkout ${session.id} was claimed without an order`);
    return ok(await fulfilledOrder(deps.db, claimed.order_id));
  }
  deps.logger.info(
    {
      event: 'order.completed',
      channel: 'app',
      orderId: outcome.order.id,
      workspaceId: row.workspace_id,
      itemId: row.item_id,
      amount: row.amount,
      currency: row.currency,
      checkoutId: session.id,
      paymentIntentId,
      startsNow: outcome.startsNow,
    },
    'order completed',
  );
  return ok({ order: outcome.order, fulfilledNow: true });
}

function disagreement(row: CheckoutRow, session: CheckoutSessionSummary): string | undefined {
  if (session.amountTotal !== row.amount) return `amount ${session.amountTotal} instead of ${row.amount}`;
  if (session.currency !== row.currency) return `currency ${session.currency} instead of ${row.currency}`;
  if (session.metadata.workspace_id !== row.workspace_id) return 'metadata names another workspace';
  if (session.metadata.item_id !== row.item_id) return 'metadata names another item';
  return undefined;
}

async function fulfilledOrder(db: Db, orderId: string): Promise<Fulfilment> {
  const order = await getOrder(db, orderId);
  if (!order) throw new Error(`fulfilled checkout's order ${orderId} is missing`);
  return { order, fulfilledNow: false };
}

/**
 * Marks an open checkout expired when the provider says it ended unpaid. A fulfilled one stays
 * fulfilled (an expiry arriving out of order changes nothing). Answers whether it changed.
 */
export async function markCheckoutExpired(
  deps: BillingDeps,
  session: CheckoutSessionSummary,
): Promise<boolean> {
  if (session.status !== 'expired') return false;
  const result = await deps.db
    .updateTable('billing_checkouts')
    .set({ status: 'expired', updated_at: deps.clock.now().getTime() })
    .where('provider_checkout_id', '=', session.id)
    .where('status', '=', 'open')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

function findCheckout(db: Db, providerCheckoutId: string): Promise<CheckoutRow | undefined> {
  return db
    .selectFrom('billing_checkouts')
    .selectAll()
    .where('provider_checkout_id', '=', providerCheckoutId)
    .executeTakeFirst();
}

/** A checkout of this workspace (another workspace's id answers nothing). */
export async function findWorkspaceCheckout(
  db: Db,
  workspaceId: string,
  providerCheckoutId: string,
): Promise<BillingCheckout | undefined> {
  const row = await findCheckout(db, providerCheckoutId);
  if (!row || row.workspace_id !== workspaceId) return undefined;
  return {
    providerCheckoutId: row.provider_checkout_id,
    workspaceId: row.workspace_id,
    itemId: row.item_id,
    plan: row.plan,
    term: row.term,
    amount: row.amount,
    status: row.status,
    orderId: row.order_id,
  };
}

export type ReturnOutcome =
  | { kind: 'paid'; order: Order }
  | { kind: 'not_paid'; status: CheckoutSessionSummary['status'] }
  | { kind: 'mismatch' }
  /** The provider could not be reached to confirm it: nothing changed, asking again later may. */
  | { kind: 'provider_unavailable' }
  /** Ours, but the provider has no session of this id (its data lost, or another account's). */
  | { kind: 'unknown_at_provider' };

/**
 * Where the provider sends the person back: a checkout our record shows fulfilled answers its
 * order; otherwise asks the provider about the checkout and, when it is paid, fulfils it (unless
 * the event did first). Undefined when the checkout is not this workspace's.
 */
export async function settleReturn(
  deps: BillingDeps,
  workspaceId: string,
  providerCheckoutId: string,
): Promise<ReturnOutcome | undefined> {
  const checkout = await findWorkspaceCheckout(deps.db, workspaceId, providerCheckoutId);
  if (!checkout) return undefined;
  if (checkout.status === 'fulfilled' && checkout.orderId)
    return { kind: 'paid', order: (await fulfilledOrder(deps.db, checkout.orderId)).order };
  let session: CheckoutSessionSummary | undefined;
  try {
    session = await deps.psp.retrieveCheckoutSession(providerCheckoutId);
  } catch (error) {
    if (!(error instanceof ProviderUnavailableError)) throw error;
    deps.logger.warn(
      { event: 'billing.return_unconfirmed', err: error, checkoutId: providerCheckoutId, workspaceId },
      'the provider could not be asked about a checkout on the return page',
    );
    return { kind: 'provider_unavailable' };
  }
  if (!session) return { kind: 'unknown_at_provider' };
  const fulfilled = await fulfilCheckout(deps, session);
  if (fulfilled.ok) return { kind: 'paid', order: fulfilled.value.order };
  if (fulfilled.error.code === 'mismatch') return { kind: 'mismatch' };
  if (fulfilled.error.code === 'unknown_checkout') return undefined;
  if (session.status === 'expired') await markCheckoutExpired(deps, session);
  return { kind: 'not_paid', status: session.status };
}
