/**
 * What must hold after the chaos, read from the provider (the sandbox, through the official SDK),
 * the database, the webhook receiver and the clients' own records.
 */
import Stripe from 'stripe';
import { openDatabase } from '../../src/db/database.ts';
import type { Cluster } from '../cluster/cluster.ts';
import { Journal } from './journal.ts';
import type { Receiver } from './receiver.ts';
import type { Acknowledged, Purchase, RestClient } from './workload.ts';

/** A copy of a webhook event arriving again this long after a fault ended is not that fault's. */
const FAULT_GRACE_MS = 45_000;
/** A first copy sent just before a fault struck (then not recorded) arrived before the window opened. */
const FAULT_LEAD_MS = 10_000;
/** Requests still in flight when a database outage ended may answer 500 a little later. */
export const OUTAGE_GRACE_MS = 3000;

export interface Ledger {
  /** Succeeded payment intents in the sandbox, by the order their metadata names. */
  chargesByOrder: Map<string, number>;
  charges: number;
  orders: Set<string>;
  workspaces: number;
  /** Workspaces with an owner invitation (a purchase's or the CLI's, not one sent by a member). */
  invitedWorkspaces: number;
  /** Payment attempts still pending or charged without their order: recovery has not finished. */
  unsettled: number;
  needsReview: number;
}

export async function readLedger(cluster: Cluster): Promise<Ledger> {
  const sandbox = new URL(cluster.sandboxUrl);
  const stripe = new Stripe(cluster.pspSecretKey, {
    host: sandbox.hostname,
    port: sandbox.port,
    protocol: 'http',
    telemetry: false,
  });
  const chargesByOrder = new Map<string, number>();
  let charges = 0;
  for await (const intent of stripe.paymentIntents.list({ limit: 100 })) {
    if (intent.status !== 'succeeded') continue;
    charges++;
    const orderId = intent.metadata?.order_id ?? `(no order id: ${intent.id})`;
    chargesByOrder.set(orderId, (chargesByOrder.get(orderId) ?? 0) + 1);
  }
  const database = openDatabase({ kind: 'postgres', url: cluster.databaseUrl });
  try {
    const { db } = database;
    const orders = new Set((await db.selectFrom('orders').select('id').execute()).map((row) => row.id));
    const count = async (query: { executeTakeFirstOrThrow(): Promise<{ n: string | number | bigint }> }) =>
      Number((await query.executeTakeFirstOrThrow()).n);
    const workspaces = await count(db.selectFrom('workspaces').select((eb) => eb.fn.countAll().as('n')));
    const invitedWorkspaces = await count(
      db
        .selectFrom('workspace_invitations')
        .where('invited_by_user_id', 'is', null)
        .select((eb) => eb.fn.count('workspace_id').distinct().as('n')),
    );
    const unsettled = await count(
      db
        .selectFrom('payment_attempts')
        .where('status', 'in', ['pending', 'charged'])
        .select((eb) => eb.fn.countAll().as('n')),
    );
    const needsReview = await count(
      db
        .selectFrom('payment_attempts')
        .where('status', '=', 'needs_review')
        .select((eb) => eb.fn.countAll().as('n')),
    );
    return { chargesByOrder, charges, orders, workspaces, invitedWorkspaces, unsettled, needsReview };
  } finally {
    await database.close();
  }
}

/** Whether recovery is over: every attempt settled and every charge has its order. */
export function settled(ledger: Ledger, expected: readonly Acknowledged[], receiver: Receiver): boolean {
  const received = new Set([...receiver.events.values()].map((event) => `${event.type} ${event.dataId}`));
  return (
    ledger.unsettled === 0 &&
    ledger.charges === ledger.orders.size &&
    expected.every((write) => received.has(`${write.type} ${write.id}`))
  );
}

export interface Check {
  name: string;
  value: number | string;
  ok: boolean;
}

export async function checkInvariants(input: {
  ledger: Ledger;
  purchases: readonly Purchase[];
  rest: RestClient;
  receiver: Receiver;
  journal: Journal;
}): Promise<Check[]> {
  const { ledger, purchases, rest, receiver, journal } = input;
  const succeeded = purchases.filter((purchase) => purchase.outcome === 'succeeded');
  const doubleCharges = [...ledger.chargesByOrder.values()].filter((n) => n > 1).length;
  const chargesWithoutOrder = [...ledger.chargesByOrder.keys()].filter((id) => !ledger.orders.has(id)).length;
  const ordersWithoutCharge = [...ledger.orders].filter((id) => !ledger.chargesByOrder.has(id)).length;
  const lostPurchases = succeeded.filter(
    (purchase) =>
      purchase.orderId === undefined ||
      !ledger.orders.has(purchase.orderId) ||
      ledger.chargesByOrder.get(purchase.orderId) !== 1,
  ).length;

  const received = new Map(
    [...receiver.events.values()].map((event) => [`${event.type} ${event.dataId}`, event]),
  );
  const lostEvents = rest.acknowledged.filter((write) => !received.has(`${write.type} ${write.id}`)).length;
  let duplicatesInFaults = 0;
  let duplicatesOutside = 0;
  for (const event of receiver.events.values()) {
    const [first, ...again] = event.arrivals;
    if (first === undefined || again.length === 0) continue;
    // At least once: a worker that sent and then died (or lost its database) before recording the
    // attempt sends again once its job's lease ends.
    if (Journal.within(journal.faults, first + FAULT_LEAD_MS, FAULT_GRACE_MS + FAULT_LEAD_MS)) {
      duplicatesInFaults += again.length;
    } else duplicatesOutside += again.length;
  }

  let failedDownloads = 0;
  const lostUploads = new Set<string>();
  for (const upload of rest.uploads) {
    // Twice in a row, so that with roundrobin each file is read through two instances.
    for (let i = 0; i < 2; i++) {
      if ((await rest.download(upload.id)) === upload.sha256) continue;
      failedDownloads++;
      lostUploads.add(upload.id);
    }
  }

  const fiveHundreds = journal.responses.filter((seen) => seen.status === 500);
  const outside = fiveHundreds.filter((seen) => !Journal.within(journal.outages, seen.at, OUTAGE_GRACE_MS));
  const outsideByKind = new Map<string, number>();
  for (const seen of outside) outsideByKind.set(seen.kind, (outsideByKind.get(seen.kind) ?? 0) + 1);
  const kinds = [...outsideByKind].map(([kind, n]) => `${kind}: ${n}`).join(', ');
  const equal =
    ledger.charges === ledger.orders.size &&
    ledger.orders.size === ledger.workspaces &&
    ledger.workspaces === ledger.invitedWorkspaces;
  return [
    {
      name: 'charges = orders = workspaces = owner invitations',
      value: `${ledger.charges} = ${ledger.orders.size} = ${ledger.workspaces} = ${ledger.invitedWorkspaces}`,
      ok: equal,
    },
    { name: 'double charges (an order paid more than once)', value: doubleCharges, ok: doubleCharges === 0 },
    {
      name: `lost purchases (of ${succeeded.length} the clients saw succeed: no order, or not exactly one charge)`,
      value: lostPurchases,
      ok: lostPurchases === 0,
    },
    {
      name: 'charges without an order after recovery',
      value: chargesWithoutOrder,
      ok: chargesWithoutOrder === 0,
    },
    { name: 'orders without a charge', value: ordersWithoutCharge, ok: ordersWithoutCharge === 0 },
    {
      name: 'payment attempts still unsettled after recovery',
      value: ledger.unsettled,
      ok: ledger.unsettled === 0,
    },
    { name: 'payment attempts left for review (needs_review)', value: ledger.needsReview, ok: true },
    {
      name: `webhook events lost (of ${rest.acknowledged.length} acknowledged writes)`,
      value: lostEvents,
      ok: lostEvents === 0,
    },
    {
      name: 'webhook copies delivered again after a fault (at least once, same webhook-id)',
      value: duplicatesInFaults,
      ok: true,
    },
    {
      name: 'webhook copies delivered again with no fault',
      value: duplicatesOutside,
      ok: duplicatesOutside === 0,
    },
    {
      name: 'webhook copies with a bad signature',
      value: receiver.badSignatures(),
      ok: receiver.badSignatures() === 0,
    },
    {
      name: `evidence lost (of ${rest.uploads.length} acknowledged uploads, each downloaded twice)`,
      value: `${lostUploads.size} files (${failedDownloads} failed downloads)`,
      ok: lostUploads.size === 0,
    },
    {
      name: '500 responses outside the database-outage window',
      value: `${outside.length}${kinds ? ` (${kinds})` : ''} (inside: ${fiveHundreds.length - outside.length})`,
      ok: outside.length === 0,
    },
  ];
}
