import { type Static, Type } from 'typebox';
import { type AuditAction, type AuditSource, recordAuditEvent } from '../audit/index.ts';
import { checkEntitlement, type PlanId, type PlanLimitReached } from '../catalog/index.ts';
import { CREATION_ORDER, fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction, lockingRead } from '../db/transaction.ts';
import { releaseKey } from '../jobs/index.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { HttpUrl, iso, isoOrNull, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import { ALL_EVENTS, EVENT_TYPE_NAMES } from './catalog.ts';
import { notFound, type WebhookDeps, type WebhookError } from './context.ts';
import { endpointKey } from './events.ts';
import { newSigningSecret } from './signing.ts';
import { checkTarget } from './target.ts';
import type { SubscriptionStatus, WebhookSubscriptionsTable } from './webhooks.table.ts';

const SUBSCRIPTION_STATUSES = ['enabled', 'disabled'] as const satisfies readonly SubscriptionStatus[];

const EventTypeName = Type.Enum([...EVENT_TYPE_NAMES, ALL_EVENTS], {
  description: 'An event type of the catalog (see `webhooks` in this document), or `*` for every type.',
});

const EventTypes = Type.Array(EventTypeName, {
  minItems: 1,
  maxItems: EVENT_TYPE_NAMES.length + 1,
  description: 'What to receive. `*` means every type, including types added later.',
});

const Description = Text(500, { description: 'A note for people, e.g. what receives the events.' });

const SUBSCRIPTION_EXAMPLE = {
  id: 'hook_06f1k2m3n4p5q6r7s8t9v0w1x2',
  url: 'https://hooks.example.com/svc',
  description: 'Compliance agent inbox',
  event_types: ['task.completed', 'risk.created'],
  status: 'enabled',
  disabled_reason: null,
  failing_since: null,
  last_success_at: null,
  previous_secret_expires_at: null,
  created_at: '2026-11-02T08:30:00.000Z',
  updated_at: '2026-11-02T08:30:00.000Z',
};

export const WebhookSubscription = Type.Object(
  {
    id: RecordId('hook'),
    url: Type.String({ format: 'uri' }),
    description: Nullable(Type.String()),
    event_types: Type.Array(EventTypeName),
    status: Type.Enum(SUBSCRIPTION_STATUSES),
    disabled_reason: Nullable(
      Type.Enum(['user', 'gone', 'failing', 'plan_limit'], {
        description:
          '`user`: disabled with PATCH; `gone`: the receiver answered 410; `failing`: every attempt of a ' +
          'delivery failed over its whole retry schedule (about a day); `plan_limit`: paused when the ' +
          'workspace moved to a plan that allows fewer subscriptions (the oldest stay enabled), resumed when a plan that allows it starts.',
      }),
    ),
    failing_since: Nullable(Timestamp),
    last_success_at: Nullable(Timestamp),
    previous_secret_expires_at: Nullable({
      ...Timestamp,
      description: 'After a rotation, the old secret also signs until then.',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'A URL that receives signed events of this workspace. The secret is never shown again.',
    examples: [SUBSCRIPTION_EXAMPLE],
  },
);
export type WebhookSubscription = Static<typeof WebhookSubscription>;

export const WebhookSubscriptionWithSecret = Type.Object(
  {
    ...WebhookSubscription.properties,
    secret: Type.String({
      description: 'The `whsec_` signing secret. Shown only in this answer: store it now.',
    }),
  },
  {
    description: 'A subscription with its signing secret, answered once (create and rotate).',
    examples: [{ ...SUBSCRIPTION_EXAMPLE, secret: 'whsec_fdnKXqGPk9GyX18k4m52NzoO8AzDSef69hdKrSEr9iU=' }],
  },
);
export type WebhookSubscriptionWithSecret = Static<typeof WebhookSubscriptionWithSecret>;

export const CreateSubscriptionBody = Type.Object(
  {
    url: HttpUrl('Where events are POSTed: https, on a public address, without credentials.'),
    event_types: EventTypes,
    description: Type.Optional(Description),
  },
  {
    additionalProperties: false,
    examples: [{ url: 'https://hooks.example.com/svc', event_types: ['task.completed', 'risk.created'] }],
  },
);
export type CreateSubscriptionBody = Static<typeof CreateSubscriptionBody>;

export const UpdateSubscriptionBody = Type.Object(
  {
    url: Type.Optional(HttpUrl('A new target, checked like a new subscription.')),
    event_types: Type.Optional(EventTypes),
    description: Type.Optional(Nullable(Description)),
    status: Type.Optional(
      Type.Enum(SUBSCRIPTION_STATUSES, {
        description: '`disabled` stops deliveries; `enabled` resumes them and clears the failing state.',
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ status: 'enabled' }] },
);
export type UpdateSubscriptionBody = Static<typeof UpdateSubscriptionBody>;

export const SubscriptionsFilter = Type.Object({ status: Type.Optional(Type.Enum(SUBSCRIPTION_STATUSES)) });
export type SubscriptionsFilter = Static<typeof SubscriptionsFilter>;

/** `*` stands for everything, so anything listed beside it is dropped; duplicates too. */
function normalizeEventTypes(types: readonly string[]): string[] {
  return types.includes(ALL_EVENTS) ? [ALL_EVENTS] : [...new Set(types)];
}

export function toSubscription(row: WebhookSubscriptionsTable, now: Date): WebhookSubscription {
  const graceEnds = row.previous_secret_expires_at;
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    event_types: JSON.parse(row.event_types),
    status: row.status,
    disabled_reason: row.disabled_reason,
    failing_since: isoOrNull(row.failing_since),
    last_success_at: isoOrNull(row.last_success_at),
    previous_secret_expires_at: graceEnds !== null && graceEnds > now.getTime() ? iso(graceEnds) : null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

async function findSubscriptionRow(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<WebhookSubscriptionsTable | undefined> {
  return subscriptionRow(db, workspaceId, id).executeTakeFirst();
}

/**
 * The row a change reads before it writes, locked until the transaction ends (`lockingRead`): a
 * PATCH writing back the secret it read cannot undo a rotation that committed meanwhile.
 */
export async function lockSubscriptionRow(
  trx: Tx,
  workspaceId: string,
  id: string,
): Promise<WebhookSubscriptionsTable | undefined> {
  return lockingRead(trx, subscriptionRow(trx, workspaceId, id)).executeTakeFirst();
}

function subscriptionRow(db: Db, workspaceId: string, id: string) {
  return db
    .selectFrom('webhook_subscriptions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id);
}

export async function listSubscriptions(
  { db, clock }: Pick<WebhookDeps, 'db' | 'clock'>,
  workspaceId: string,
  filter: SubscriptionsFilter,
  page: PageRequest,
): Promise<Page<WebhookSubscription>> {
  let query = db.selectFrom('webhook_subscriptions').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  const { rows, next } = await fetchPage(query, CREATION_ORDER, page);
  const now = clock.now();
  return { items: rows.map((row) => toSubscription(row, now)), next };
}

export async function getSubscription(
  { db, clock }: Pick<WebhookDeps, 'db' | 'clock'>,
  workspaceId: string,
  id: string,
): Promise<WebhookSubscription | undefined> {
  const row = await findSubscriptionRow(db, workspaceId, id);
  return row ? toSubscription(row, clock.now()) : undefined;
}

/**
 * Records a change of a subscription. The target is named by its host only: webhook URLs often
 * carry tokens, and the log outlives the subscription.
 */
export function recordSubscriptionEvent(
  trx: Tx,
  action: AuditAction,
  subscription: Pick<WebhookSubscriptionsTable, 'id' | 'workspace_id' | 'url'>,
  source: AuditSource,
  at: Date,
): Promise<void> {
  return recordAuditEvent(trx, {
    workspaceId: subscription.workspace_id,
    action,
    target: { type: 'webhook_subscription', id: subscription.id, label: new URL(subscription.url).host },
    ...source,
    at,
  });
}

async function checkedUrl(deps: WebhookDeps, url: string): Promise<Result<string, WebhookError>> {
  const target = await checkTarget(url, deps.targets);
  return target.ok ? ok(target.value.url.href) : err({ code: 'target_refused', refusal: target.error });
}

/** The target is checked (resolving its host) before the transaction, so no lock waits on DNS. */
export async function createSubscription(
  deps: WebhookDeps,
  workspaceId: string,
  body: CreateSubscriptionBody,
  source: AuditSource,
): Promise<Result<WebhookSubscriptionWithSecret, WebhookError>> {
  const url = await checkedUrl(deps, body.url);
  if (!url.ok) return url;
  return inTransaction(deps.db, async (trx) => {
    // Under the workspace's lock, two concurrent creations count one after the other.
    const plan = (await deps.lockWorkspace(trx, workspaceId))?.plan;
    if (!plan) return err(notFound);
    const { count } = await trx
      .selectFrom('webhook_subscriptions')
      .select((eb) => eb.fn.countAll().as('count'))
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirstOrThrow();
    const refusal = checkEntitlement(plan, 'webhook_subscriptions', Number(count));
    if (refusal) return err(refusal);
    const now = deps.clock.now();
    const row: WebhookSubscriptionsTable = {
      id: newId('hook', now),
      workspace_id: workspaceId,
      url: url.value,
      description: body.description ?? null,
      event_types: JSON.stringify(normalizeEventTypes(body.event_types)),
      secret: newSigningSecret(),
      previous_secret: null,
      previous_secret_expires_at: null,
      status: 'enabled',
      disabled_reason: null,
      failing_since: null,
      last_success_at: null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    };
    await trx.insertInto('webhook_subscriptions').values(row).execute();
    await recordSubscriptionEvent(trx, 'webhook.created', row, source, now);
    return ok({ ...toSubscription(row, now), secret: row.secret });
  });
}

/**
 * Changes apply to events published afterwards. Disabling keeps the pending deliveries, which are
 * cancelled when their next attempt comes due; enabling a disabled subscription starts it afresh.
 */
export async function updateSubscription(
  deps: WebhookDeps,
  workspaceId: string,
  id: string,
  body: UpdateSubscriptionBody,
  source: AuditSource,
): Promise<Result<WebhookSubscription, WebhookError>> {
  const url = body.url === undefined ? undefined : await checkedUrl(deps, body.url);
  if (url && !url.ok) return url;
  return inTransaction(deps.db, async (trx) => {
    // Workspace before subscription, the order a plan change locks them in (it pauses and resumes
    // subscriptions under the workspace's lock); the other order could deadlock with it.
    const plan = body.status === 'enabled' ? (await deps.lockWorkspace(trx, workspaceId))?.plan : undefined;
    const existing = await lockSubscriptionRow(trx, workspaceId, id);
    if (!existing) return err(notFound);
    if (plan && existing.status === 'disabled') {
      const refusal = await checkResumable(trx, workspaceId, plan);
      if (refusal) return err(refusal);
    }
    const now = deps.clock.now();
    const row: WebhookSubscriptionsTable = { ...existing, updated_at: now.getTime() };
    if (url) row.url = url.value;
    if (body.event_types) row.event_types = JSON.stringify(normalizeEventTypes(body.event_types));
    if (body.description !== undefined) row.description = body.description;
    if (body.status === 'disabled' && existing.status === 'enabled') {
      Object.assign(row, { status: 'disabled', disabled_reason: 'user' });
    } else if (body.status === 'enabled' && existing.status === 'disabled') {
      Object.assign(row, { status: 'enabled', disabled_reason: null, failing_since: null });
    }
    const changed = (Object.keys(row) as (keyof WebhookSubscriptionsTable)[]).some(
      (column) => column !== 'updated_at' && row[column] !== existing[column],
    );
    if (!changed) return ok(toSubscription(existing, now));
    const { id: _id, workspace_id: _workspace, created_at: _created, ...columns } = row;
    await trx
      .updateTable('webhook_subscriptions')
      .set(columns)
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    if (row.status === 'enabled' && existing.status === 'disabled') await releaseKey(trx, endpointKey(id));
    for (const action of changeActions(existing, row)) {
      await recordSubscriptionEvent(trx, action, row, source, now);
    }
    return ok(toSubscription(row, now));
  });
}

/**
 * Resuming is refused when as many subscriptions as the plan allows deliver already: after a
 * move to a smaller plan, the ones paused over its limit (or by a person) cannot all come back.
 */
/** Whether the plan (read under the workspace's lock) has room for one more enabled subscription. */
async function checkResumable(
  trx: Tx,
  workspaceId: string,
  plan: PlanId,
): Promise<PlanLimitReached | undefined> {
  const { count } = await trx
    .selectFrom('webhook_subscriptions')
    .select((eb) => eb.fn.countAll().as('count'))
    .where('workspace_id', '=', workspaceId)
    .where('status', '=', 'enabled')
    .executeTakeFirstOrThrow();
  return checkEntitlement(plan, 'webhook_subscriptions', Number(count));
}

/** Pausing and resuming are events of their own; any other change is `webhook.updated`. */
function changeActions(before: WebhookSubscriptionsTable, after: WebhookSubscriptionsTable): AuditAction[] {
  const actions: AuditAction[] = [];
  if (before.status !== after.status) {
    actions.push(after.status === 'disabled' ? 'webhook.paused' : 'webhook.resumed');
  }
  if (
    before.url !== after.url ||
    before.event_types !== after.event_types ||
    before.description !== after.description
  ) {
    actions.push('webhook.updated');
  }
  return actions;
}

/** Its deliveries and their attempts go with it. */
export async function deleteSubscription(
  { db, clock }: Pick<WebhookDeps, 'db' | 'clock'>,
  workspaceId: string,
  id: string,
  source: AuditSource,
): Promise<Result<{ id: string }, WebhookError>> {
  return inTransaction(db, async (trx) => {
    const deleted = await trx
      .deleteFrom('webhook_subscriptions')
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .returning(['id', 'workspace_id', 'url'])
      .executeTakeFirst();
    if (!deleted) return err(notFound);
    await releaseKey(trx, endpointKey(id));
    await recordSubscriptionEvent(trx, 'webhook.deleted', deleted, source, clock.now());
    return ok({ id });
  });
}
