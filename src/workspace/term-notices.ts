import { PLANS, type PlanId } from '../catalog/index.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { queueMail, type RenderedMail, renderMovedToFree, renderTermEnding } from '../mail/index.ts';
import { type Clock, DAY_MS } from '../shared/clock.ts';
import { membersWithAddress } from './member-addresses.ts';
import type { TermNoticeKind } from './workspace.table.ts';

/**
 * The reminders before a term ends. Each is due from `daysBefore` days before the end until the
 * next one is due: after downtime only the reminder whose window the clock is in is sent (with
 * less than a day left, the 1-day one, not a late "7 days" one), and none once the term has ended
 * (the moved-to-Free email then says it).
 */
/** What the notices need: the clock and the service's address for the Billing link. */
interface NoticeContext {
  clock: Clock;
  baseUrl: string;
}

const REMINDERS = [
  { kind: 'reminder_7_days', daysBefore: 7, dueUntilDaysBefore: 1 },
  { kind: 'reminder_1_day', daysBefore: 1, dueUntilDaysBefore: 0 },
] as const satisfies readonly { kind: TermNoticeKind; daysBefore: 7 | 1; dueUntilDaysBefore: number }[];

export interface SentTermNotice {
  workspaceId: string;
  orderId: string;
  kind: TermNoticeKind;
  /** How many owners the email was queued for. */
  recipients: number;
}

export function billingUrl(baseUrl: string, workspaceId: string): string {
  return new URL(`/w/${workspaceId}/billing`, baseUrl).toString();
}

/**
 * Queues every reminder that is due and not yet sent, once per term and kind (see `recordNotice`).
 * A term followed by another open term of the same workspace (one already paid for the time
 * after it) gets no reminder: the workspace does not move to Free when it ends.
 */
export async function sendDueTermReminders(
  db: Db,
  ctx: NoticeContext,
  batchSize = 100,
): Promise<SentTermNotice[]> {
  const sent: SentTermNotice[] = [];
  for (const reminder of REMINDERS) {
    for (;;) {
      const now = ctx.clock.now().getTime();
      const due = await db
        .selectFrom('workspace_terms as term')
        .innerJoin('workspaces', 'workspaces.id', 'term.workspace_id')
        .select([
          'term.id',
          'term.workspace_id',
          'term.order_id',
          'term.plan',
          'term.ends_at',
          'workspaces.name',
        ])
        .where('term.ended_at', 'is', null)
        .where('term.starts_at', '<=', now)
        .where('term.ends_at', '<=', now + reminder.daysBefore * DAY_MS)
        .where('term.ends_at', '>', now + reminder.dueUntilDaysBefore * DAY_MS)
        .where(({ exists, not, selectFrom }) =>
          not(
            exists(
              selectFrom('term_notices')
                .select('term_notices.term_id')
                .whereRef('term_notices.term_id', '=', 'term.id')
                .where('term_notices.kind', '=', reminder.kind),
            ),
          ),
        )
        .where(({ exists, not, selectFrom }) =>
          not(
            exists(
              selectFrom('workspace_terms as later')
                .select('later.id')
                .whereRef('later.workspace_id', '=', 'term.workspace_id')
                .where('later.ended_at', 'is', null)
                .whereRef('later.ends_at', '>', 'term.ends_at'),
            ),
          ),
        )
        .orderBy('term.ends_at')
        .limit(batchSize)
        .execute();
      if (due.length === 0) break;
      for (const term of due) {
        const mail = renderTermEnding({
          workspaceName: term.name,
          planName: PLANS[term.plan].name,
          endsAt: new Date(term.ends_at),
          daysBefore: reminder.daysBefore,
          billingUrl: billingUrl(ctx.baseUrl, term.workspace_id),
        });
        const recipients = await inTransaction(db, (trx) =>
          recordNotice(
            trx,
            ctx,
            { termId: term.id, workspaceId: term.workspace_id, kind: reminder.kind },
            mail,
          ),
        );
        if (recipients !== undefined)
          sent.push({
            workspaceId: term.workspace_id,
            orderId: term.order_id,
            kind: reminder.kind,
            recipients,
          });
      }
    }
  }
  return sent;
}

/**
 * Tells the owners that the workspace moved to Free, in the transaction of the term-end change.
 * Answers how many owners it went to.
 */
export async function sendMovedToFree(
  trx: Tx,
  ctx: NoticeContext,
  term: { id: string; workspaceId: string; plan: PlanId; endedAt: Date },
): Promise<number> {
  const workspace = await trx
    .selectFrom('workspaces')
    .select('name')
    .where('id', '=', term.workspaceId)
    .executeTakeFirstOrThrow();
  const mail = renderMovedToFree({
    workspaceName: workspace.name,
    planName: PLANS[term.plan].name,
    endedAt: term.endedAt,
    billingUrl: billingUrl(ctx.baseUrl, term.workspaceId),
  });
  return (
    (await recordNotice(
      trx,
      ctx,
      { termId: term.id, workspaceId: term.workspaceId, kind: 'moved_to_free' },
      mail,
    )) ?? 0
  );
}

/**
 * Records the notice and queues its email to every owner, in one transaction. The insert is the
 * once-only guard: when the (term, kind) row exists already (another instance, an earlier run)
 * it writes nothing and answers undefined; on PostgreSQL a concurrent insert of the same key
 * waits for the other transaction and then finds the row.
 */
async function recordNotice(
  trx: Tx,
  ctx: NoticeContext,
  notice: { termId: string; workspaceId: string; kind: TermNoticeKind },
  mail: RenderedMail,
): Promise<number | undefined> {
  const owners = await ownerAddresses(trx, notice.workspaceId);
  const recorded = await trx
    .insertInto('term_notices')
    .values({
      term_id: notice.termId,
      kind: notice.kind,
      recipients: owners.length,
      sent_at: ctx.clock.now().getTime(),
    })
    .onConflict((oc) => oc.columns(['term_id', 'kind']).doNothing())
    .returning('term_id')
    .executeTakeFirst();
  if (!recorded) return undefined;
  for (const address of owners)
    await queueMail(trx, ctx.clock, address, mail, { workspaceId: notice.workspaceId });
  return owners.length;
}

/**
 * The owners' addresses: each owner member's account address (the address they joined with when
 * no account is linked). A workspace whose owner has not accepted the invitation yet has none;
 * then the address the newest owner invitation went to, as for other owner notices.
 */
async function ownerAddresses(db: Db, workspaceId: string): Promise<string[]> {
  const owners = await membersWithAddress(db, workspaceId).where('member.role', '=', 'owner').execute();
  if (owners.length > 0) return owners.map((owner) => owner.email);
  const invited = await db
    .selectFrom('workspace_invitations')
    .select('email')
    .where('workspace_id', '=', workspaceId)
    .where('role', '=', 'owner')
    .where('withdrawn_at', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .executeTakeFirst();
  return invited ? [invited.email] : [];
}
