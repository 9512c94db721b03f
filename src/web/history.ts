import { AUDIT_ACTIONS, listAuditEvents } from '../audit/index.ts';
import type { WebDeps } from './context.ts';

/** How many of a record's changes its page shows, newest first (the audit log has them all). */
const HISTORY_SHOWN = 50;

/** One change of a record as its page tells it: who, when, what, and each field from and to. */
export interface HistoryEntry {
  at: Date;
  actor: string;
  description: string;
  changes: { field: string; from: string; to: string }[];
}

function shown(value: unknown): string {
  if (value === null || value === undefined || value === '') return '—';
  if (Array.isArray(value)) return value.length === 0 ? '—' : value.join(', ');
  return String(value);
}

/** The record's history from the audit log: every change, from the app, the API or the CLI. */
export async function recordHistory(
  deps: WebDeps,
  workspaceId: string,
  recordId: string,
): Promise<HistoryEntry[]> {
  const page = await listAuditEvents(deps.db, workspaceId, { target_id: recordId }, { limit: HISTORY_SHOWN });
  return page.items.map((event) => ({
    at: new Date(event.created_at),
    actor: event.actor.label,
    description: AUDIT_ACTIONS[event.action],
    changes: Object.entries(event.changes ?? {}).map(([field, change]) => ({
      field: field.replaceAll('_', ' '),
      from: shown(change.from),
      to: shown(change.to),
    })),
  }));
}
