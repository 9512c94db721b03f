import type { FastifyInstance } from 'fastify';
import { PLANS } from '../../catalog/index.ts';
import { canManageWorkspace, hasAccess, listMemberships, type Membership } from '../../workspace/index.ts';
import { BAR_ORDER, IMPACT_LABELS, RATING_LABELS, STATUS_LABELS, workspaceGlance } from '../glance.ts';
import { signedInUser } from '../guard.ts';
import { sendPage, sendView } from '../render.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const planNames = Object.fromEntries(Object.values(PLANS).map((plan) => [plan.id, plan.name]));

/** Where a membership's workspace opens: an auditor, who reads no overview, starts at its controls. */
export function workspaceHome(membership: Membership): string {
  const base = `/w/${encodeURIComponent(membership.workspace.id)}`;
  return membership.role === 'auditor' ? `${base}/controls` : base;
}

export function workspaceRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get('/workspaces', async (request, reply) => {
    const user = signedInUser(request, reply);
    if (!user) return reply;
    // An auditor whose access has ended no longer sees the workspace listed.
    const memberships = (await listMemberships(deps.db, user.id))
      .filter((membership) => hasAccess(membership, deps.clock.now()))
      .map((membership) => ({ ...membership, home: workspaceHome(membership) }));
    return sendPage(request, reply, 'workspaces', { title: 'Your workspaces', memberships, planNames });
  });

  // The first page after sign-in: the workspace at a glance when there is one, the list otherwise.
  app.get('/w', async (request, reply) => {
    const user = signedInUser(request, reply);
    if (!user) return reply;
    const memberships = (await listMemberships(deps.db, user.id)).filter((membership) =>
      hasAccess(membership, deps.clock.now()),
    );
    const only = memberships.length === 1 ? memberships[0] : undefined;
    return reply.redirect(only ? workspaceHome(only) : '/workspaces', 303);
  });
}

/** The workspace at a glance: its readiness, plan and what needs doing. */
export function workspaceOverviewRoutes(app: FastifyInstance, deps: RouteDeps): void {
  app.get('', async (request, reply) => {
    const { workspace, role } = accessOf(request).membership;
    return sendView(request, reply, 'workspace', {
      title: workspace.name,
      workspace,
      role,
      planName: PLANS[workspace.plan].name,
      nextTerms: workspace.nextTerms.map((term) => ({ ...term, planName: PLANS[term.plan].name })),
      canManage: canManageWorkspace(role),
      glance: await workspaceGlance(deps, workspace.id),
      barOrder: BAR_ORDER,
      statusLabels: STATUS_LABELS,
      ratingLabels: RATING_LABELS,
      impactLabels: IMPACT_LABELS,
    });
  });
}
