import { AUDIT_ACTIONS, listAuditEvents } from '../audit/index.ts';
import { allControls, allPeople, personLabel } from './choices.ts';
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

/** Fields whose values are control ids, shown as their Annex A references. */
const CONTROL_FIELDS: ReadonlySet<string> = new Set(['control_ids', 'control_id']);
/** Fields whose values are people of the directory, shown by name. */
const PERSON_FIELDS: ReadonlySet<string> = new Set(['owner_id', 'assignee_id']);
/** Fields whose values are one of a closed list (`not_started`), shown as words ("Not started"). */
const CHOICE_FIELDS: ReadonlySet<string> = new Set([
  'status',
  'treatment',
  'risk_level',
  'employment_status',
  'kind',
]);

function shown(value: unknown): string {
  if (value === null || value === undefined || value === '') return '—';
  if (Array.isArray(value)) return value.length === 0 ? '—' : value.join(', ');
  return String(value);
}

function asWords(value: unknown): unknown {
  if (typeof value !== 'string' || value === '') return value;
  const words = value.replaceAll('_', ' ');
  return `${words.charAt(0).toUpperCase()}${words.slice(1)}`;
}

/**
 * The record's history from the audit log: every change, from the app, the API or the CLI, with
 * controls by reference, people by name and choices in words. The directory and the controls are
 * read once for the whole history, and only when a change names them.
 */
export async function recordHistory(
  deps: WebDeps,
  workspaceId: string,
  recordId: string,
): Promise<HistoryEntry[]> {
  const page = await listAuditEvents(deps.db, workspaceId, { target_id: recordId }, { limit: HISTORY_SHOWN });
  const changed = new Set(page.items.flatMap((event) => Object.keys(event.changes ?? {})));
  const names = new Map<string, string>();
  if ([...changed].some((field) => CONTROL_FIELDS.has(field))) {
    for (const control of await allControls(deps, workspaceId)) names.set(control.id, control.reference);
  }
  if ([...changed].some((field) => PERSON_FIELDS.has(field))) {
    for (const person of await allPeople(deps, workspaceId)) names.set(person.id, personLabel(person));
  }
  const named = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(named);
    return typeof value === 'string' ? (names.get(value) ?? value) : value;
  };
  const wordingOf = (field: string) => {
    if (CONTROL_FIELDS.has(field) || PERSON_FIELDS.has(field)) return named;
    return CHOICE_FIELDS.has(field) ? asWords : (value: unknown) => value;
  };
  return page.items.map((event) => ({
    at: new Date(event.created_at),
    actor: event.actor.label,
    description: AUDIT_ACTIONS[event.action],
    changes: Object.entries(event.changes ?? {}).map(([field, change]) => {
      const word = wordingOf(field);
      return {
        field: field.replace(/_ids$/, 's').replace(/_id$/, '').replaceAll('_', ' '),
        from: shown(word(change.from)),
        to: shown(word(change.to)),
      };
    }),
  }));
}
