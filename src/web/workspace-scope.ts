import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../accounts/index.ts';
import { recordAuditEvent } from '../audit/index.ts';
import { inTransaction } from '../db/transaction.ts';
import { canManageWorkspace, type Membership, type Workspace } from '../workspace/index.ts';
import { userSourceOf } from './audit.ts';
import { membershipFor } from './guard.ts';
import type { RouteDeps } from './routes/deps.ts';

/** What a workspace page needs of its visitor: any member (`view`), or an owner or admin (`manage`). */
export type WorkspaceRole = 'view' | 'manage';

/** The signed-in account and its membership of the workspace in the URL. */
export interface WorkspaceAccess {
  user: User;
  membership: Membership;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The role a route under `/w/:workspaceId` needs; `view` (any member) when not given. */
    workspaceRole?: WorkspaceRole;
    /** True on the read-only pages an external auditor may open (controls, SoA, risks, policies, evidence, the package). */
    auditorMayRead?: boolean;
  }
  interface FastifyRequest {
    workspaceAccess?: WorkspaceAccess;
  }
}

/** The routes of one page group under `/w/:workspaceId`, paths relative to it. */
export type WorkspacePages = (scope: FastifyInstance, deps: RouteDeps) => void;

/**
 * One scope for every page of a workspace: its hook resolves the membership once, before the body
 * is read, and answers a visitor who is not signed in (the sign-in page, coming back here), not a
 * member (404: whether the workspace exists is not their business) or lacks the route's role (403);
 * handlers read the result with `accessOf`. An external auditor passes only to `auditorMayRead`
 * routes while their access lasts (see `membershipFor`), and each page or file sent to them is
 * recorded in the audit log before it leaves.
 */
export function registerWorkspacePages(app: FastifyInstance, deps: RouteDeps, pages: WorkspacePages[]): void {
  app.register(
    async (scope) => {
      scope.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
        const { workspaceId } = request.params as { workspaceId: string };
        const role = request.routeOptions.config.workspaceRole ?? 'view';
        const access = await membershipFor(deps, request, reply, workspaceId, role);
        if (!access) return reply;
        request.workspaceAccess = access;
      });
      // onSend rather than onResponse: no page reaches an auditor without its record.
      scope.addHook('onSend', async (request, reply, payload) => {
        const access = request.workspaceAccess;
        if (access?.membership.role === 'auditor' && reply.statusCode >= 200 && reply.statusCode < 300) {
          await recordAuditorVisit(deps, request, reply, access);
        }
        return payload;
      });
      for (const register of pages) register(scope, deps);
    },
    { prefix: '/w/:workspaceId' },
  );
}

const FILE_NAME = /filename\*=UTF-8''([^;]+)|filename="([^"]*)"/;

/** `auditor.page_viewed`, or `auditor.file_downloaded` for an attachment, with the path (and file name) opened. */
async function recordAuditorVisit(
  deps: RouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  access: WorkspaceAccess,
): Promise<void> {
  const disposition = String(reply.getHeader('content-disposition') ?? '');
  const download = disposition.startsWith('attachment');
  const path = request.url.split('?')[0] ?? request.url;
  const named = download ? FILE_NAME.exec(disposition) : null;
  const fileName = named ? (named[1] ? decodeURIComponent(named[1]) : named[2]) : undefined;
  const route = request.routeOptions.url ?? path;
  await inTransaction(deps.db, (trx) =>
    recordAuditEvent(trx, {
      workspaceId: access.membership.workspace.id,
      action: download ? 'auditor.file_downloaded' : 'auditor.page_viewed',
      target: {
        type: download ? 'file' : 'page',
        id: route.replace(/^\/w\/:workspaceId/, '') || '/',
        label: fileName ? `${fileName} (${path})` : path,
      },
      ...userSourceOf(request, access.user),
      at: deps.clock.now(),
    }),
  );
}

/** The access the workspace scope resolved for this request. */
export function accessOf(request: FastifyRequest): WorkspaceAccess {
  const access = request.workspaceAccess;
  if (!access) throw new Error(`${request.routeOptions.url} is not a workspace page`);
  return access;
}

/** What every workspace page shows around its content: the workspace, and whether the nav offers the owners' and admins' pages. */
export function pageBaseOf(request: FastifyRequest): { workspace: Workspace; canManage: boolean } {
  const { membership } = accessOf(request);
  return { workspace: membership.workspace, canManage: canManageWorkspace(membership.role) };
}

/** Whether the visitor of this workspace page is an external auditor, who reads and changes nothing. */
export function isAuditor(request: FastifyRequest): boolean {
  return accessOf(request).membership.role === 'auditor';
}
