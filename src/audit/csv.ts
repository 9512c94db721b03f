import { everyPage } from '../db/keyset.ts';
import type { Db } from '../db/schema.ts';
import { type CsvColumn, csvChunks } from '../shared/csv.ts';
import { AUDIT_ACTIONS } from './actions.ts';
import { type AuditEvent, type AuditEventsFilter, listAuditEvents } from './events.ts';

const COLUMNS: readonly CsvColumn<AuditEvent>[] = [
  { header: 'time', cell: (event) => event.created_at },
  { header: 'action', cell: (event) => event.action },
  { header: 'description', cell: (event) => AUDIT_ACTIONS[event.action] },
  { header: 'actor', cell: (event) => event.actor.label },
  { header: 'actor_user_id', cell: (event) => event.actor.user_id },
  { header: 'actor_api_key_id', cell: (event) => event.actor.api_key_id },
  { header: 'target_type', cell: (event) => event.target?.type ?? null },
  { header: 'target_id', cell: (event) => event.target?.id ?? null },
  { header: 'target', cell: (event) => event.target?.label ?? null },
  { header: 'ip', cell: (event) => event.ip },
  { header: 'user_agent', cell: (event) => event.user_agent },
  { header: 'id', cell: (event) => event.id },
];

/** Rows read per query while streaming an export. */
const EXPORT_PAGE_SIZE = 500;

/**
 * The workspace's audit log as CSV, newest first, read a page at a time so an export of any size
 * holds one page in memory.
 */
export function auditEventsCsv(
  db: Db,
  workspaceId: string,
  filter: AuditEventsFilter,
): AsyncGenerator<string> {
  return csvChunks(
    COLUMNS,
    everyPage((page) => listAuditEvents(db, workspaceId, filter, page), EXPORT_PAGE_SIZE),
  );
}
