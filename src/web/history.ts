import { AUDIT_ACTIONS, listAuditEvents } from '../audit/index.ts';
import { allControls } from './choices.ts';
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

/** Fields whose values are control ids, shown as their Annex A references. */
const CONTROL_FIELDS: ReadonlySet<string> = new Set(['control_ids', 'control_id']);

/** The record's history from the audit log: every change, from the app, the API or the CLI. */
export async function recordHistory(
  deps: WebDeps,
  workspaceId: string,
  recordId: string,
): Promise<HistoryEntry[]> {
  const page = await listAuditEvents(deps.db, workspaceId, { target_id: recordId }, { limit: HISTORY_SHOWN });
  const namesControls = page.items.some((event) =>
    Object.keys(event.changes ?? {}).some((field) => CONTROL_FIELDS.has(field)),
  );
  // Read once for the whole history, and only when a change names controls.
  const references = namesControls
    ? new Map((await allControls(deps, workspaceId)).map((control) => [control.id, control.reference]))
    : new Map<string, string>();
  const asReferences = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(asReferences);
    return typeof value === 'string' ? (references.get(value) ?? value) : value;
  };
  return page.items.map((event) => ({
    at: new Date(event.created_at),
    actor: event.actor.label,
    description: AUDIT_ACTIONS[event.action],
    changes: Object.entries(event.changes ?? {}).map(([field, change]) => {
      const named = CONTROL_FIELDS.has(field) ? asReferences : (value: unknown) => value;
      return {
        field: field.replaceAll('_', ' '),
        from: shown(named(change.from)),
        to: shown(named(change.to)),
      };
    }),
  }));
}
