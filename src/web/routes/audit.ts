import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { decodeCursor, encodeCursor } from '../../api/index.ts';
import {
  AUDIT_ACTION_NAMES,
  AUDIT_ACTIONS,
  type AuditAction,
  auditEventsCsv,
  isAuditAction,
  listAuditEvents,
} from '../../audit/index.ts';
import { PositionMismatchError } from '../../db/keyset.ts';
import { sendPage } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;

type AuditRequest = {
  Params: { workspaceId: string };
  Querystring: { action?: unknown; cursor?: unknown };
};

/** The action filter of the query string: all actions, one of the list, or not one we know. */
function actionFilter(value: unknown): { action?: AuditAction } | undefined {
  if (value === undefined || value === '') return {};
  return typeof value === 'string' && isAuditAction(value) ? { action: value } : undefined;
}

function sendBadFilter(request: FastifyRequest, reply: FastifyReply, message: string): FastifyReply {
  return sendPage(
    request,
    reply,
    'error',
    { title: 'Not a filter of this list', heading: 'This list cannot be shown', message },
    400,
  );
}

const ACTION_OPTIONS = AUDIT_ACTION_NAMES.map((value) => ({ value, label: AUDIT_ACTIONS[value] }));

/** The audit log of a workspace for its owners and admins: a page newest first, and its CSV. */
export function auditRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<AuditRequest>('/audit', { config: { workspaceRole: 'manage' } }, async (request, reply) => {
    const access = accessOf(request);
    const workspace = access.membership.workspace;
    const filter = actionFilter(request.query.action);
    if (!filter) return sendBadFilter(request, reply, 'Choose an action from the list, or all actions.');
    const scope = { workspaceId: workspace.id, list: 'app/audit', filter };
    const { cursor } = request.query;
    const after = typeof cursor === 'string' ? decodeCursor(cursor, scope) : undefined;
    if (cursor !== undefined && !after) {
      return sendBadFilter(
        request,
        reply,
        'The link to this page of the list is not valid; start again from the newest events.',
      );
    }
    let page: Awaited<ReturnType<typeof listAuditEvents>>;
    try {
      page = await listAuditEvents(deps.db, workspace.id, filter, { limit: PAGE_SIZE, after });
    } catch (error) {
      if (error instanceof PositionMismatchError) {
        return sendBadFilter(
          request,
          reply,
          'The link to this page of the list is not valid; start again from the newest events.',
        );
      }
      throw error;
    }
    const query = (extra: Record<string, string>) => {
      const params = new URLSearchParams({ ...(filter.action ? { action: filter.action } : {}), ...extra });
      const text = params.toString();
      return text ? `?${text}` : '';
    };
    return sendPage(request, reply, 'audit', {
      title: `Audit log · ${workspace.name}`,
      workspace,
      events: page.items.map((event) => ({
        ...event,
        description: AUDIT_ACTIONS[event.action],
        at: new Date(event.created_at),
      })),
      actionOptions: ACTION_OPTIONS,
      action: filter.action ?? '',
      isFirstPage: after === undefined,
      firstPageUrl: `/w/${workspace.id}/audit${query({})}`,
      nextPageUrl: page.next
        ? `/w/${workspace.id}/audit${query({ cursor: encodeCursor(page.next, scope) })}`
        : null,
      csvUrl: `/w/${workspace.id}/audit.csv${query({})}`,
    });
  });

  app.get<AuditRequest>('/audit.csv', { config: { workspaceRole: 'manage' } }, async (request, reply) => {
    const access = accessOf(request);
    const filter = actionFilter(request.query.action);
    if (!filter) return sendBadFilter(request, reply, 'Choose an action from the list, or all actions.');
    const workspaceId = access.membership.workspace.id;
    return reply
      .header('content-type', 'text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="audit-${workspaceId}.csv"`)
      .header('cache-control', 'no-store')
      .header('x-content-type-options', 'nosniff')
      .send(Readable.from(auditEventsCsv(deps.db, workspaceId, filter)));
  });
}
