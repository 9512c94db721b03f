import { AUDIT_ACTION_NAMES, AUDIT_ACTIONS, type AuditEvent } from '../../audit/index.ts';
import type { Workspace } from '../../workspace/index.ts';
import type { ListFilterField, ListView } from '../list-page.ts';

export const AUDIT_FILTERS: readonly ListFilterField[] = [
  {
    name: 'action',
    label: 'Action',
    kind: 'select',
    allLabel: 'All actions',
    options: AUDIT_ACTION_NAMES.map((value) => ({ value, label: AUDIT_ACTIONS[value] })),
  },
];

/** An event as a row: what happened in words, and when as a date. */
export type AuditRow = AuditEvent & { description: string; at: Date };

export interface AuditView {
  workspace: Workspace;
  list: ListView<AuditRow>;
}

declare module '../render.ts' {
  interface PageViews {
    audit: AuditView;
  }
}

export function auditRows(events: AuditEvent[]): AuditRow[] {
  return events.map((event) => ({
    ...event,
    description: AUDIT_ACTIONS[event.action],
    at: new Date(event.created_at),
  }));
}

export const AUDIT_CSV_HEADER = [
  'time',
  'action',
  'description',
  'actor',
  'actor_user_id',
  'actor_api_key_id',
  'target_type',
  'target_id',
  'target',
  'ip',
  'user_agent',
  'id',
] as const;

export function auditCsvRow(event: AuditEvent): (string | null)[] {
  return [
    event.created_at,
    event.action,
    AUDIT_ACTIONS[event.action],
    event.actor.label,
    event.actor.user_id,
    event.actor.api_key_id,
    event.target?.type ?? null,
    event.target?.id ?? null,
    event.target?.label ?? null,
    event.ip,
    event.user_agent,
    event.id,
  ];
}
