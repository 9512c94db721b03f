import { type Static, Type } from 'typebox';
import { fetchPage, type KeysetOrder, type Page, type PageRequest } from '../db/keyset.ts';
import { insertRow } from '../db/prepared.ts';
import type { Db, Tx } from '../db/schema.ts';
import { newId } from '../shared/ids.ts';
import { iso, Nullable, RecordId, Timestamp } from '../shared/wire.ts';
import { AUDIT_ACTION_NAMES, type AuditAction } from './actions.ts';
import type { AuditActor } from './actors.ts';
import type { AuditEventsTable } from './audit.table.ts';

/** Bounds of what an event keeps: enough to recognise, never a way to fill the table. */
const LABEL_MAX = 200;
const TARGET_TYPE_MAX = 40;
const TARGET_ID_MAX = 64;
const IP_MAX = 64;
export const USER_AGENT_MAX = 256;

export interface AuditEventInput {
  workspaceId: string | null;
  actor: AuditActor;
  action: AuditAction;
  target?: { type: string; id: string; label?: string };
  ip?: string | null;
  userAgent?: string | null;
  /** The fields an edit changed, each from its old value to its new one. */
  changes?: AuditChanges;
  at: Date;
}

/** Field name to its value before and after (ids, dates as `YYYY-MM-DD`, short texts). */
export type AuditChanges = Record<string, { from: unknown; to: unknown }>;

/** Storable (no U+0000, no lone surrogate) and at most `max` characters. */
function bounded(value: string, max: number): string {
  const clean = value.toWellFormed().replaceAll('\u0000', '\uFFFD');
  const characters = [...clean];
  return characters.length <= max ? clean : `${characters.slice(0, max - 1).join('')}…`;
}

const boundedOrNull = (value: string | null | undefined, max: number): string | null =>
  value === undefined || value === null || value === '' ? null : bounded(value, max);

/**
 * Records an event in the caller's transaction, so it commits with the change it describes, or
 * not at all.
 */
export async function recordAuditEvent(trx: Tx, input: AuditEventInput): Promise<void> {
  await insertRow(trx, 'audit_events', {
    id: newId('aud', input.at),
    workspace_id: input.workspaceId,
    action: input.action,
    actor_user_id: input.actor.userId ?? null,
    actor_api_key_id: input.actor.apiKeyId ?? null,
    actor_label: bounded(input.actor.label, LABEL_MAX),
    target_type: boundedOrNull(input.target?.type, TARGET_TYPE_MAX),
    target_id: boundedOrNull(input.target?.id, TARGET_ID_MAX),
    target_label: boundedOrNull(input.target?.label, LABEL_MAX),
    ip: boundedOrNull(input.ip, IP_MAX),
    user_agent: boundedOrNull(input.userAgent, USER_AGENT_MAX),
    changes: input.changes && Object.keys(input.changes).length > 0 ? JSON.stringify(input.changes) : null,
    created_at: input.at.getTime(),
  });
}

const AUDIT_EVENT_EXAMPLE = {
  id: 'aud_06f1k2m3n4p5q6r7s8t9v0w1x2',
  action: 'api_key.created',
  actor: { user_id: 'usr_06f1k2m3n4p5q6r7s8t9v0w1x2', api_key_id: null, label: 'ada@example.com' },
  target: { type: 'api_key', id: 'key_06f1k2m3n4p5q6r7s8t9v0w1x3', label: 'Compliance agent' },
  ip: '203.0.113.7',
  user_agent: 'Mozilla/5.0 (X11; Linux x86_64)',
  changes: null,
  created_at: '2026-11-02T08:30:00.000Z',
};

const ActionName = Type.Enum(AUDIT_ACTION_NAMES, { description: 'What happened.' });

export const AuditEvent = Type.Object(
  {
    id: RecordId('aud'),
    action: ActionName,
    actor: Type.Object(
      {
        user_id: Nullable(Type.String({ description: 'The account that acted, if one did.' })),
        api_key_id: Nullable(Type.String({ description: 'The API key that acted, if one did.' })),
        label: Type.String({
          description:
            'Who acted, as shown at the time: an address, an API key’s name and prefix, `System` ' +
            '(the service’s own sweeps), `Operator (CLI)`, an agent checkout, or `Unknown` (a failed sign-in).',
        }),
      },
      { description: 'Who did it.' },
    ),
    target: Nullable(
      Type.Object(
        { type: Type.String(), id: Type.String(), label: Nullable(Type.String()) },
        {
          description:
            'What it was done to: an account, an API key, a webhook subscription, an invitation, an order.',
        },
      ),
    ),
    ip: Nullable(Type.String({ description: 'The client address the request came from.' })),
    user_agent: Nullable(
      Type.String({ description: `The client's User-Agent, at most ${USER_AGENT_MAX} characters.` }),
    ),
    changes: Nullable(
      Type.Record(Type.String(), Type.Object({ from: Type.Unknown(), to: Type.Unknown() }), {
        description: 'What an edit of a record changed: each field from its old value to its new one.',
      }),
    ),
    created_at: Timestamp,
  },
  {
    description: 'One entry of the audit log: who did what, when and from where.',
    examples: [AUDIT_EVENT_EXAMPLE],
  },
);
export type AuditEvent = Static<typeof AuditEvent>;

export const AuditEventsFilter = Type.Object({
  action: Type.Optional(ActionName),
  target_id: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'Only the events of this record (its id).' }),
  ),
});
export type AuditEventsFilter = Static<typeof AuditEventsFilter>;

/** Newest first: ids are time-ordered. */
const NEWEST_FIRST: KeysetOrder = { direction: 'desc', columns: [{ column: 'id', type: 'string' }] };

function toAuditEvent(row: AuditEventsTable): AuditEvent {
  return {
    id: row.id,
    action: row.action,
    actor: { user_id: row.actor_user_id, api_key_id: row.actor_api_key_id, label: row.actor_label },
    target:
      row.target_type !== null && row.target_id !== null
        ? { type: row.target_type, id: row.target_id, label: row.target_label }
        : null,
    ip: row.ip,
    user_agent: row.user_agent,
    changes: row.changes === null ? null : (JSON.parse(row.changes) as AuditChanges),
    created_at: iso(row.created_at),
  };
}

/** A workspace's events, newest first, optionally of one action. */
export async function listAuditEvents(
  db: Db,
  workspaceId: string,
  filter: AuditEventsFilter,
  page: PageRequest,
): Promise<Page<AuditEvent>> {
  let query = db.selectFrom('audit_events').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.action) query = query.where('action', '=', filter.action);
  if (filter.target_id) query = query.where('target_id', '=', filter.target_id);
  const { rows, next } = await fetchPage(query, NEWEST_FIRST, page);
  return { items: rows.map(toAuditEvent), next };
}
