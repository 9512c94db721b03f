import { type Static, Type } from 'typebox';
import { fetchPage, type KeysetOrder, type Page, type PageRequest } from '../db/keyset.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { iso, isoOrNull, Nullable, RecordId, Timestamp } from '../shared/wire.ts';
import { notFound, type WebhookDeps, type WebhookError } from './context.ts';
import { queueDelivery, recordEvent } from './events.ts';
import type { DeliveryStatus, WebhookAttemptsTable } from './webhooks.table.ts';

const DELIVERY_STATUSES = [
  'pending',
  'succeeded',
  'failed',
  'cancelled',
] as const satisfies readonly DeliveryStatus[];

const TIMED_OUT_ATTEMPT = {
  number: 1,
  started_at: '2026-11-23T10:15:00.120Z',
  duration_ms: 10_000,
  status_code: null,
  error: 'no complete answer within 10000 ms',
  response_excerpt: null,
};
const UNAVAILABLE_ATTEMPT = {
  number: 2,
  started_at: '2026-11-23T10:15:14.870Z',
  duration_ms: 85,
  status_code: 503,
  error: null,
  response_excerpt: 'Service Unavailable',
};

export const WebhookAttempt = Type.Object(
  {
    number: Type.Integer({ minimum: 1 }),
    started_at: Timestamp,
    duration_ms: Type.Integer({ description: 'Latency: from sending the request to the end of the answer.' }),
    status_code: Nullable(Type.Integer({ description: 'Null when no HTTP answer came.' })),
    error: Nullable(Type.String({ description: 'Why the attempt failed without a 2xx, when known.' })),
    response_excerpt: Nullable(Type.String({ description: 'The first KiB of the answer body.' })),
  },
  { examples: [UNAVAILABLE_ATTEMPT] },
);

export const WebhookDelivery = Type.Object(
  {
    id: RecordId('whd'),
    subscription_id: RecordId('hook'),
    event_id: RecordId('evt', 'Also the `webhook-id` header: the same on every attempt and redelivery.'),
    event_type: Type.String(),
    status: Type.Enum(DELIVERY_STATUSES, {
      description:
        '`pending` while attempts remain; `succeeded` on a 2xx; `failed` when attempts ran out or the ' +
        'receiver answered 410; `cancelled` when the subscription was disabled first.',
    }),
    attempt_count: Type.Integer({ minimum: 0 }),
    next_attempt_at: Nullable(Timestamp),
    last_status_code: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    created_at: Timestamp,
    finished_at: Nullable(Timestamp),
    attempts: Type.Array(WebhookAttempt, { description: 'Oldest first; at most 8.' }),
  },
  {
    description: 'One event on its way to one subscription, with every attempt made.',
    examples: [
      {
        id: 'whd_06f1k2m3n4p5q6r7s8t9v0w1x2',
        subscription_id: 'hook_06f1k2m3n4p5q6r7s8t9v0w1x2',
        event_id: 'evt_06f1k2m3n4p5q6r7s8t9v0w1x2',
        event_type: 'task.completed',
        status: 'pending',
        attempt_count: 2,
        next_attempt_at: '2026-11-23T10:20:32.410Z',
        last_status_code: 503,
        last_error: null,
        created_at: '2026-11-23T10:15:00.000Z',
        finished_at: null,
        attempts: [TIMED_OUT_ATTEMPT, UNAVAILABLE_ATTEMPT],
      },
    ],
  },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const DeliveriesFilter = Type.Object({ status: Type.Optional(Type.Enum(DELIVERY_STATUSES)) });
export type DeliveriesFilter = Static<typeof DeliveriesFilter>;

/** The `data` of `webhook.test`. */
export const WebhookTestData = Type.Object(
  { subscription_id: RecordId('hook'), message: Type.String() },
  { description: 'Sent on request to one subscription only, to check the receiver and its signature check.' },
);

function deliveriesOf(db: Db, workspaceId: string) {
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .select([
      'd.id',
      'd.subscription_id',
      'd.event_id',
      'e.type as event_type',
      'd.status',
      'd.attempt_count',
      'd.next_attempt_at',
      'd.last_status_code',
      'd.last_error',
      'd.created_at',
      'd.finished_at',
    ])
    .where('d.workspace_id', '=', workspaceId);
}

type DeliveryRow = Awaited<ReturnType<ReturnType<typeof deliveriesOf>['executeTakeFirstOrThrow']>>;

/** The rows with their attempts, fetched in one query for the whole page. */
async function withAttempts(db: Db, rows: DeliveryRow[]): Promise<WebhookDelivery[]> {
  const attempts =
    rows.length === 0
      ? []
      : await db
          .selectFrom('webhook_attempts')
          .selectAll()
          .where(
            'delivery_id',
            'in',
            rows.map((row) => row.id),
          )
          .orderBy('attempt_number')
          .execute();
  const byDelivery = Map.groupBy(attempts, (attempt: WebhookAttemptsTable) => attempt.delivery_id);
  return rows.map((row) => ({
    ...row,
    next_attempt_at: isoOrNull(row.next_attempt_at),
    created_at: iso(row.created_at),
    finished_at: isoOrNull(row.finished_at),
    attempts: (byDelivery.get(row.id) ?? []).map((attempt) => ({
      number: attempt.attempt_number,
      started_at: iso(attempt.started_at),
      duration_ms: attempt.duration_ms,
      status_code: attempt.status_code,
      error: attempt.error,
      response_excerpt: attempt.response_excerpt,
    })),
  }));
}

const NEWEST_FIRST: KeysetOrder = { direction: 'desc', columns: [{ column: 'd.id', type: 'string' }] };

export async function listDeliveries(
  { db }: Pick<WebhookDeps, 'db'>,
  workspaceId: string,
  subscriptionId: string,
  filter: DeliveriesFilter,
  page: PageRequest,
): Promise<Page<WebhookDelivery>> {
  let query = deliveriesOf(db, workspaceId).where('d.subscription_id', '=', subscriptionId);
  if (filter.status) query = query.where('d.status', '=', filter.status);
  const { rows, next } = await fetchPage(query, NEWEST_FIRST, page);
  return { items: await withAttempts(db, rows), next };
}

async function newDelivery(
  trx: Tx,
  workspaceId: string,
  at: Date,
  eventId: string,
  subscriptionId: string,
): Promise<WebhookDelivery> {
  const id = await queueDelivery(trx, at, eventId, subscriptionId, workspaceId);
  const row = await deliveriesOf(trx, workspaceId).where('d.id', '=', id).executeTakeFirstOrThrow();
  const [delivery] = await withAttempts(trx, [row]);
  return delivery as WebhookDelivery;
}

async function enabledSubscription(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<Result<string, WebhookError>> {
  const subscription = await db
    .selectFrom('webhook_subscriptions')
    .select(['id', 'status'])
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!subscription) return err(notFound);
  return subscription.status === 'enabled' ? ok(subscription.id) : err({ code: 'subscription_disabled' });
}

/** Records a `webhook.test` event and delivers it to this subscription only. */
export async function sendTestEvent(
  deps: Pick<WebhookDeps, 'db' | 'clock'>,
  workspaceId: string,
  subscriptionId: string,
): Promise<Result<WebhookDelivery, WebhookError>> {
  return inTransaction(deps.db, async (trx) => {
    const subscription = await enabledSubscription(trx, workspaceId, subscriptionId);
    if (!subscription.ok) return subscription;
    const now = deps.clock.now();
    const event = await recordEvent(trx, now, {
      workspaceId,
      type: 'webhook.test',
      data: { subscription_id: subscriptionId, message: 'A test event, sent on request.' },
    });
    return ok(await newDelivery(trx, workspaceId, now, event.id, subscriptionId));
  });
}

/** Delivers the event of a delivery again, as a new delivery: same body, same `webhook-id`. */
export async function redeliver(
  deps: Pick<WebhookDeps, 'db' | 'clock'>,
  workspaceId: string,
  subscriptionId: string,
  deliveryId: string,
): Promise<Result<WebhookDelivery, WebhookError>> {
  return inTransaction(deps.db, async (trx) => {
    const original = await trx
      .selectFrom('webhook_deliveries')
      .select('event_id')
      .where('workspace_id', '=', workspaceId)
      .where('subscription_id', '=', subscriptionId)
      .where('id', '=', deliveryId)
      .executeTakeFirst();
    if (!original) return err(notFound);
    const subscription = await enabledSubscription(trx, workspaceId, subscriptionId);
    if (!subscription.ok) return subscription;
    return ok(await newDelivery(trx, workspaceId, deps.clock.now(), original.event_id, subscriptionId));
  });
}
