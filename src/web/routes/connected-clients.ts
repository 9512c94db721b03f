import type { FastifyInstance } from 'fastify';
import { listConnectedClients, mcpResourceOf, revokeConnectedClient } from '../../oauth/index.ts';
import { userSourceOf } from '../audit.ts';
import { sendPage } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

type Params = { Params: { workspaceId: string }; Querystring: { notice?: string } };
type GrantParams = { Params: { workspaceId: string; grantId: string } };

/** Integrations, Connected clients: the MCP clients people allowed into this workspace, and their revocation. */
export function connectedClientRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<Params>(
    '/integrations/clients',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const workspace = accessOf(request).membership.workspace;
      return sendPage(request, reply, 'connected-clients', {
        title: `Connected clients · ${workspace.name}`,
        workspace,
        clients: await listConnectedClients(deps.db, workspace.id),
        mcpUrl: mcpResourceOf(deps.config.baseUrl),
        notice: request.query.notice === 'revoked' ? 'revoked' : undefined,
      });
    },
  );

  app.post<GrantParams>(
    '/integrations/clients/:grantId/revoke',
    { config: { workspaceRole: 'manage' } },
    async (request, reply) => {
      const access = accessOf(request);
      const workspace = access.membership.workspace;
      const user = request.visit?.user;
      if (!user) throw new Error('a workspace page ran without a signed-in account');
      await revokeConnectedClient(
        deps,
        { workspaceId: workspace.id, grantId: request.params.grantId },
        userSourceOf(request, user),
      );
      return reply.redirect(
        `/w/${encodeURIComponent(workspace.id)}/integrations/clients?notice=revoked`,
        303,
      );
    },
  );
}
