import type { FastifyInstance } from 'fastify';
import { type AuditAction, type AuditEvent, listAuditEvents } from '../../audit/index.ts';
import {
  type ListDefinition,
  listQuerySchema,
  readList,
  sendInvalidListLink,
  sendListCsv,
} from '../list-page.ts';
import { sendView } from '../render.ts';
import { AUDIT_CSV_HEADER, AUDIT_FILTERS, auditCsvRow, auditRows } from '../views/audit.view.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;

type ListQuery = Record<string, string | undefined>;

/** The audit log of a workspace for its owners and admins: a page newest first, and its CSV. */
export function auditRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const list: ListDefinition<AuditEvent> = {
    name: 'audit',
    fields: AUDIT_FILTERS,
    pageSize: PAGE_SIZE,
    read: (workspaceId, filter, page) =>
      listAuditEvents(deps.db, workspaceId, { action: filter.action as AuditAction | undefined }, page),
    csv: { header: AUDIT_CSV_HEADER, row: auditCsvRow },
  };
  const querystring = listQuerySchema(list);
  const config = { workspaceRole: 'manage' } as const;

  app.get<{ Querystring: ListQuery }>(
    '/audit',
    { config, schema: { querystring } },
    async (request, reply) => {
      const { workspace } = accessOf(request).membership;
      const view = await readList(list, workspace.id, request.query);
      if (!view) return sendInvalidListLink(request, reply);
      return sendView(request, reply, 'audit', {
        title: `Audit log · ${workspace.name}`,
        workspace,
        list: { ...view, items: auditRows(view.items) },
      });
    },
  );

  app.get<{ Querystring: ListQuery }>(
    '/audit.csv',
    { config, schema: { querystring } },
    async (request, reply) =>
      sendListCsv(reply, list, accessOf(request).membership.workspace.id, request.query),
  );
}
