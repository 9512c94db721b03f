import { purchaseActor, recordAuditEvent, SYSTEM_ACTOR } from '../audit/index.ts';
import { PLANS, type PlanId, type TermLength, termEnd } from '../catalog/index.ts';
import { insertRow, type Param, preparedQuery } from '../db/prepared.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { applyPlanToSubscriptions, publishEvent } from '../webhooks/index.ts';
import { lockWorkspace } from './lock.ts';
import { sendInvitation } from './send-invitation.ts';
import { sendMovedToFree } from './term-notices.ts';

export interface WorkspaceContext {
  clock: Clock;
  baseUrl: string;
}

export interface NewTerm {
  term: TermLength;
  startsAt: Date;
  /** Who sold the term: `acp`, `ucp`, `mpp`, or `operator`. */
  channel: string;
  orderId: string;
}

export interface ProvisionInput {
  name: string;
  plan: PlanId;
  ownerEmail: string;
  /** Absent for a Free workspace. */
  term?: NewTerm;
}

export interface Term {
  plan: PlanId;
  term: TermLength;
  startsAt: Date;
  endsAt: Date;
  channel: string;
  orderId: string;
  renews: false;
}

export interface Workspace {
  id: string;
  name: string;
  plan: PlanId;
  createdAt: Date;
  /** The term in force; null on Free. */
  currentTerm: Term | null;
  /** Terms already paid that follow the current one, each starting when the one before ends (bought on the Billing page). */
  nextTerms: Term[];
}

export interface Provisioned {
  workspace: Workspace;
}

/**
 * Creates a workspace with its term, the owner invitation and the invitation email, in the
 * caller's transaction; a term bought is in the audit log. One order makes one workspace: the
 * caller guards against asking twice (the purchase pipeline's claim on the attempt), and a second
 * call for the same order fails on the unique order id of terms, so its transaction writes nothing.
 */
export async function provisionWorkspace(
  trx: Tx,
  input: ProvisionInput,
  ctx: WorkspaceContext,
): Promise<Provisioned> {
  const now = ctx.clock.now();
  const workspaceId = newId('ws', now);
  await insertRow(trx, 'workspaces', {
    id: workspaceId,
    name: input.name,
    plan: input.plan,
    created_at: now.getTime(),
    updated_at: now.getTime(),
  });

  let currentTerm: Term | null = null;
  if (input.term) {
    const endsAt = termEnd(input.term.startsAt, input.term.term);
    await insertRow(trx, 'workspace_terms', {
      id: newId('term', now),
      workspace_id: workspaceId,
      plan: input.plan,
      term: input.term.term,
      starts_at: input.term.startsAt.getTime(),
      ends_at: endsAt.getTime(),
      channel: input.term.channel,
      order_id: input.term.orderId,
      ended_at: null,
      created_at: now.getTime(),
    });
    currentTerm = { plan: input.plan, ...input.term, endsAt, renews: false };
    await recordAuditEvent(trx, {
      workspaceId,
      actor: purchaseActor(input.term.channel),
      action: 'plan.purchased',
      target: {
        type: 'order',
        id: input.term.orderId,
        label: `${PLANS[input.plan].name}, one ${input.term.term}`,
      },
      at: now,
    });
  }

  await sendInvitation(
    trx,
    { workspaceId, workspaceName: input.name, plan: input.plan, termEndsAt: currentTerm?.endsAt ?? null },
    { email: input.ownerEmail, role: 'owner' },
    ctx,
  );
  return {
    workspace: {
      id: workspaceId,
      name: input.name,
      plan: input.plan,
      createdAt: now,
      currentTerm,
      nextTerms: [],
    },
  };
}

export type TermRow = {
  plan: PlanId;
  term: TermLength;
  starts_at: number;
  ends_at: number;
  channel: string;
  order_id: string;
};

export function toTerm(row: TermRow): Term {
  return {
    plan: row.plan,
    term: row.term,
    startsAt: new Date(row.starts_at),
    endsAt: new Date(row.ends_at),
    channel: row.channel,
    orderId: row.order_id,
    renews: false,
  };
}

export const termColumns = ['plan', 'term', 'starts_at', 'ends_at', 'channel', 'order_id'] as const;

/**
 * The workspace with its open terms in one query: they follow one another, so the earliest is in
 * force and each later one (a next term bought on Billing) starts at the end of the one before.
 * A term that starts after the end of the one before was bought once that one had ended (before
 * the sweep closed it): it is the one in force, and the earlier ones are over.
 */
const workspaceWithTerm = preparedQuery((db, param: Param<{ workspaceId: string }>) =>
  db
    .selectFrom('workspaces')
    .leftJoin('workspace_terms as term', (join) =>
      join.onRef('term.workspace_id', '=', 'workspaces.id').on('term.ended_at', 'is', null),
    )
    .select([
      'workspaces.id',
      'workspaces.name',
      'workspaces.plan',
      'workspaces.created_at',
      'term.plan as term_plan',
      'term.term',
      'term.starts_at',
      'term.ends_at',
      'term.channel',
      'term.order_id',
    ])
    .where('workspaces.id', '=', param('workspaceId'))
    .orderBy('term.starts_at')
    .orderBy('term.ends_at'),
);

export async function getWorkspace(db: Db, workspaceId: string): Promise<Workspace | undefined> {
  const { rows } = await workspaceWithTerm(db, { workspaceId });
  const row = rows[0];
  if (!row) return undefined;
  const openTerms = rows.map(termOf).filter((term) => term !== null);
  const inForce = openTerms.findLastIndex((term, i, all) => {
    const before = all[i - 1];
    return before === undefined || term.startsAt > before.endsAt;
  });
  return {
    id: row.id,
    name: row.name,
    plan: row.plan,
    createdAt: new Date(row.created_at),
    currentTerm: openTerms[inForce] ?? null,
    nextTerms: openTerms.slice(inForce + 1),
  };
}

type WorkspaceWithTermRow = Awaited<ReturnType<typeof workspaceWithTerm>>['rows'][number];

function termOf(row: WorkspaceWithTermRow): Term | null {
  if (row.term_plan === null || row.term === null || row.starts_at === null || row.ends_at === null)
    return null;
  return toTerm({
    plan: row.term_plan,
    term: row.term,
    starts_at: row.starts_at,
    ends_at: row.ends_at,
    channel: row.channel ?? '',
    order_id: row.order_id ?? '',
  });
}

export interface PaidTermInput {
  workspaceId: string;
  plan: PlanId;
  term: TermLength;
  /** Who sold the term (`app` for the Billing page). */
  channel: string;
  orderId: string;
  /** The purchase's moment, read once by the caller: a term that starts now starts exactly then. */
  at: Date;
}

export interface AddedTerm {
  term: Term;
  /** True when the term is in force now (the workspace was on Free); false for a next term. */
  startsNow: boolean;
  /** The plan before, when it changed now. */
  previousPlan: PlanId;
}

/**
 * When a paid term bought at `at` starts: then on Free, and then too when the last paid term has
 * already ended (the term-end sweep has not closed it yet: a term never starts in the past);
 * otherwise when the last paid term ends.
 */
export function paidTermStart(plan: PlanId, lastPaidTermEndsAt: Date | undefined, at: Date): Date {
  if (plan === 'free' || !lastPaidTermEndsAt || lastPaidTermEndsAt <= at) return at;
  return lastPaidTermEndsAt;
}

/**
 * Adds a paid term to an existing workspace, in the caller's transaction. When it starts now
 * (paidTermStart) the plan switches at once (webhook subscriptions paused for Free's limit
 * resume); otherwise it starts when the last paid term ends, and the term-end sweep switches to
 * it then.
 */
export async function addPaidTerm(trx: Tx, input: PaidTermInput, ctx: WorkspaceContext): Promise<AddedTerm> {
  const { clock } = ctx;
  const now = input.at;
  // Under the workspace's lock, purchases adding terms and the sweep ending one follow one
  // another: the sweep then sees a next term committed meanwhile.
  const workspace = await lockWorkspace(trx, input.workspaceId);
  if (!workspace) throw new Error(`no workspace ${input.workspaceId}`);
  const last = await trx
    .selectFrom('workspace_terms')
    .select('ends_at')
    .where('workspace_id', '=', input.workspaceId)
    .where('ended_at', 'is', null)
    .orderBy('ends_at', 'desc')
    .executeTakeFirst();
  const startsAt = paidTermStart(workspace.plan, last && new Date(last.ends_at), now);
  const startsNow = startsAt.getTime() === now.getTime();
  const endsAt = termEnd(startsAt, input.term);
  await trx
    .insertInto('workspace_terms')
    .values({
      id: newId('term', now),
      workspace_id: input.workspaceId,
      plan: input.plan,
      term: input.term,
      starts_at: startsAt.getTime(),
      ends_at: endsAt.getTime(),
      channel: input.channel,
      order_id: input.orderId,
      ended_at: null,
      created_at: now.getTime(),
    })
    .execute();
  if (startsNow) {
    await switchPlan(trx, clock, {
      workspaceId: input.workspaceId,
      from: workspace.plan,
      to: input.plan,
      reason: 'term_purchased',
      orderId: input.orderId,
    });
  }
  const term: Term = {
    plan: input.plan,
    term: input.term,
    startsAt,
    endsAt,
    channel: input.channel,
    orderId: input.orderId,
    renews: false,
  };
  return { term, startsNow, previousPlan: workspace.plan };
}

/**
 * Moves the workspace to a paid term's plan (bought on Free, or a next term starting): the
 * plan, its event and audit entry, and the webhook subscriptions the plan allows resume.
 */
async function switchPlan(
  trx: Tx,
  clock: Clock,
  change: {
    workspaceId: string;
    from: PlanId;
    to: PlanId;
    reason: 'term_purchased' | 'next_term_started';
    orderId: string;
  },
): Promise<void> {
  const now = clock.now();
  if (change.from !== change.to) {
    await trx
      .updateTable('workspaces')
      .set({ plan: change.to, updated_at: now.getTime() })
      .where('id', '=', change.workspaceId)
      .execute();
    await publishEvent(trx, clock, {
      workspaceId: change.workspaceId,
      type: 'workspace.plan_changed',
      data: { previous_plan: change.from, plan: change.to, reason: change.reason },
    });
    await recordAuditEvent(trx, {
      workspaceId: change.workspaceId,
      actor: SYSTEM_ACTOR,
      action: 'plan.changed',
      target: {
        type: 'order',
        id: change.orderId,
        label: `${PLANS[change.from].name} to ${PLANS[change.to].name}: ${
          change.reason === 'term_purchased' ? 'a paid term started' : 'the next paid term started'
        }`,
      },
      at: now,
    });
  }
  await applyPlanToSubscriptions(trx, { workspaceId: change.workspaceId, plan: change.to, clock });
}

/** Those of `ids` that are workspaces of this database. */
export async function knownWorkspaceIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('workspaces').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((row) => row.id));
}

export async function findWorkspaceByOrder(db: Db, orderId: string): Promise<Workspace | undefined> {
  const term = await db
    .selectFrom('workspace_terms')
    .select('workspace_id')
    .where('order_id', '=', orderId)
    .executeTakeFirst();
  return term ? getWorkspace(db, term.workspace_id) : undefined;
}

export interface EndedTerm {
  workspaceId: string;
  orderId: string;
  /** The plan of the term that ended. */
  plan: PlanId;
  /** The workspace's plan now: Free, unless another term is still in force. */
  planNow: PlanId;
  endedAt: Date;
  /** How many owners were emailed that the workspace moved to Free (0 when it did not move). */
  ownersNotified: number;
  /** The webhook subscriptions paused for being over Free's limit (none when it did not move). */
  subscriptionsPaused: string[];
}

/**
 * Moves every workspace whose term has ended to the Free plan. Because it selects all terms
 * whose end has passed, the first run after downtime catches up on the ones missed. Each term is
 * closed with a conditional update, so concurrent instances close it once.
 */
export async function endElapsedTerms(db: Db, ctx: WorkspaceContext, batchSize = 100): Promise<EndedTerm[]> {
  const ended: EndedTerm[] = [];
  for (;;) {
    const now = ctx.clock.now().getTime();
    const due = await db
      .selectFrom('workspace_terms')
      .select(termColumns)
      .select(['id', 'workspace_id'])
      .where('ended_at', 'is', null)
      .where('ends_at', '<=', now)
      .orderBy('ends_at')
      .limit(batchSize)
      .execute();
    if (due.length === 0) return ended;
    for (const term of due) {
      const closed = await inTransaction(db, (trx) => closeTerm(trx, ctx, term, now));
      if (closed)
        ended.push({
          workspaceId: term.workspace_id,
          orderId: term.order_id,
          plan: term.plan,
          endedAt: new Date(now),
          ...closed,
        });
    }
  }
}

/**
 * Closes one term with a conditional update (concurrent instances close it once). When a next
 * term was paid for, the workspace moves to its plan; when no other term is open, it moves to
 * Free, pauses the webhook subscriptions over Free's limit and emails its owners. Each change
 * publishes its event. Answers the workspace's plan afterwards, or false when another instance
 * closed the term first.
 */
async function closeTerm(
  trx: Tx,
  ctx: WorkspaceContext,
  term: TermRow & { id: string; workspace_id: string },
  now: number,
): Promise<{ planNow: PlanId; ownersNotified: number; subscriptionsPaused: string[] } | false> {
  const { clock } = ctx;
  await lockWorkspace(trx, term.workspace_id);
  const result = await trx
    .updateTable('workspace_terms')
    .set({ ended_at: now })
    .where('id', '=', term.id)
    .where('ended_at', 'is', null)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  const workspaceId = term.workspace_id;
  const ending = toTerm(term);
  await publishEvent(trx, clock, {
    workspaceId,
    type: 'workspace.term_ended',
    data: {
      plan: ending.plan,
      term: ending.term,
      starts_at: ending.startsAt.toISOString(),
      ends_at: ending.endsAt.toISOString(),
      renews: false,
    },
  });
  const following = await trx
    .selectFrom('workspace_terms')
    .select(['plan', 'order_id'])
    .where('workspace_id', '=', workspaceId)
    .where('ended_at', 'is', null)
    .orderBy('starts_at')
    .executeTakeFirst();
  const workspace = await trx
    .selectFrom('workspaces')
    .select('plan')
    .where('id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  if (following && workspace.plan !== 'free') {
    // A next term already paid starts here: its plan, not Free, and no moved-to-Free email.
    if (following.plan !== workspace.plan) {
      await switchPlan(trx, clock, {
        workspaceId,
        from: workspace.plan,
        to: following.plan,
        reason: 'next_term_started',
        orderId: following.order_id,
      });
    }
    return { planNow: following.plan, ownersNotified: 0, subscriptionsPaused: [] };
  }
  if (following || workspace.plan === 'free') {
    return { planNow: workspace.plan, ownersNotified: 0, subscriptionsPaused: [] };
  }
  await trx
    .updateTable('workspaces')
    .set({ plan: 'free', updated_at: now })
    .where('id', '=', workspaceId)
    .execute();
  await publishEvent(trx, clock, {
    workspaceId,
    type: 'workspace.plan_changed',
    data: { previous_plan: workspace.plan, plan: 'free', reason: 'term_ended' },
  });
  await recordAuditEvent(trx, {
    workspaceId,
    actor: SYSTEM_ACTOR,
    action: 'plan.changed',
    target: {
      type: 'order',
      id: term.order_id,
      label: `${PLANS[workspace.plan].name} to ${PLANS.free.name}: the term ended`,
    },
    at: new Date(now),
  });
  const { paused } = await applyPlanToSubscriptions(trx, { workspaceId, plan: 'free', clock });
  const ownersNotified = await sendMovedToFree(trx, ctx, {
    id: term.id,
    workspaceId,
    plan: term.plan,
    endedAt: new Date(now),
  });
  return { planNow: 'free', ownersNotified, subscriptionsPaused: paused };
}
