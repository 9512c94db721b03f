import type { FastifyInstance } from 'fastify';
import { PLANS } from '../../catalog/index.ts';
import { membershipFor } from '../guard.ts';
import { sendPage } from '../render.ts';
import type { RouteDeps } from './deps.ts';

/**
 * Billing for owners and admins, where the term-end emails link. A placeholder until the Billing
 * page of issue 15 is built: the plan, the term and that it does not renew.
 */
export function billingRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get<{ Params: { workspaceId: string } }>('/w/:workspaceId/billing', async (request, reply) => {
    const access = await membershipFor(deps, request, reply, request.params.workspaceId, 'manage');
    if (!access) return reply;
    const { workspace } = access.membership;
    return sendPage(request, reply, 'billing', {
      title: `${workspace.name}: Billing`,
      workspace,
      planName: PLANS[workspace.plan].name,
    });
  });
}
