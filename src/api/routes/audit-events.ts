import { AuditEvent, AuditEventsFilter, listAuditEvents } from '../../audit/index.ts';
import type { SchemaCatalog } from '../catalog.ts';
import type { ApiDeps, ApiScope } from '../context.ts';
import { responses } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';

export function auditEventRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ AuditEvent });
  app.get(
    '/audit-events',
    {
      schema: {
        operationId: 'listAuditEvents',
        summary: "List the workspace's audit log: who did what, when and from where",
        description:
          'Newest first. Sign-ins (successful and failed) of the members, API keys created, rotated and ' +
          'revoked, webhook subscription changes, invitations and plan changes. Filter with `action`.',
        tags: ['Audit log'],
        querystring: listQuery(AuditEventsFilter),
        response: responses({ 200: pageOf(AuditEvent) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'audit-events', request.query, (workspaceId, filter, page) =>
        listAuditEvents(deps.db, workspaceId, filter, page),
      ),
  );
}
