import type { Db } from '../db/schema.ts';
import { AUDIT_ACTIONS } from './actions.ts';
import { type AuditEvent, type AuditEventsFilter, listAuditEvents } from './events.ts';

const HEADER = [
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
];

/** Rows read per query while streaming an export. */
const EXPORT_PAGE_SIZE = 500;

/**
 * One CSV field. A spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage
 * return as a formula, and names, addresses and user agents are anyone's to choose: such a cell
 * gets a leading `'` (OWASP's advice). Then quoted as RFC 4180 says when it needs to be.
 */
export function csvField(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

function csvLine(fields: (string | null)[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

function csvRow(event: AuditEvent): string {
  return csvLine([
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
  ]);
}

/**
 * The workspace's audit log as CSV, newest first, read a page at a time so an export of any size
 * holds one page in memory.
 */
export async function* auditEventsCsv(
  db: Db,
  workspaceId: string,
  filter: AuditEventsFilter,
): AsyncGenerator<string> {
  yield csvLine(HEADER);
  let after: (string | number)[] | undefined;
  do {
    const page = await listAuditEvents(db, workspaceId, filter, { limit: EXPORT_PAGE_SIZE, after });
    yield page.items.map(csvRow).join('');
    after = page.next ?? undefined;
  } while (after);
}
