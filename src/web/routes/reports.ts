import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { sendDownload } from '../../http/download.ts';
import {
  approveSoa,
  currentSoa,
  currentSoaFile,
  FILE_TYPES,
  listSoaVersions,
  reportFileName,
  SOA_FILE_FORMATS,
  type SoaFileFormat,
  soaVersionFile,
  treatmentPlan,
  treatmentPlanFile,
} from '../../reports/index.ts';
import { userSourceOf } from '../audit.ts';
import { sendNotFound, sendView } from '../render.ts';
import { changeLines, PLAN_VIEW_LABELS, SOA_VIEW_LABELS } from '../views/soa.view.ts';
import { accessOf, pageBaseOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const NOTICES = {
  approved: 'Approved: the Statement of Applicability is kept as this version for good.',
  nothing_to_approve: 'Nothing changed since the latest version: there is nothing new to approve.',
  conflict: 'Someone approved the Statement of Applicability at the same moment: here is the result.',
} as const;
type Notice = keyof typeof NOTICES;

const NoticeQuerystring = Type.Object({
  notice: Type.Optional(Type.String({ maxLength: 40 })),
});

type FormatParams = { Params: { format: string } };
type VersionFileParams = { Params: { number: string; format: string } };

const isFormat = (value: string): value is SoaFileFormat =>
  (SOA_FILE_FORMATS as readonly string[]).includes(value);
const isVersionNumber = (value: string) => /^[1-9][0-9]{0,8}$/.test(value);

/** Pages an external auditor may read (the flag of `workspace-scope.ts`). */
const auditorPage = { auditorMayRead: true } as const;

/**
 * The Statement of Applicability (its table, gaps, changes since the latest version, versions and
 * downloads; owners and admins approve it) and the risk treatment plan, through the reports
 * module, as `/api/v1/soa` and `/api/v1/risk-treatment-plan` read them.
 */
export function reportRoutes(app: FastifyInstance, deps: RouteDeps): void {
  async function soaPage(
    request: FastifyRequest,
    reply: FastifyReply,
    extra: { notice?: string | undefined; refusal?: string; status?: number },
  ) {
    const base = pageBaseOf(request);
    const soa = await currentSoa(deps, base.workspace.id);
    return sendView(
      request,
      reply,
      'soa',
      {
        title: `Statement of Applicability · ${base.workspace.name}`,
        ...base,
        ...SOA_VIEW_LABELS,
        soa,
        versions: await listSoaVersions(deps, base.workspace.id),
        changes: changeLines(soa.changes),
        notice: extra.notice,
        refusal: extra.refusal,
      },
      extra.status,
    );
  }

  app.get<{ Querystring: { notice?: string } }>(
    '/soa',
    { config: auditorPage, schema: { querystring: NoticeQuerystring } },
    async (request, reply) => {
      const notice = request.query.notice;
      return soaPage(request, reply, {
        notice: notice && Object.hasOwn(NOTICES, notice) ? NOTICES[notice as Notice] : undefined,
      });
    },
  );

  app.get<FormatParams>('/soa/files/:format', { config: auditorPage }, async (request, reply) => {
    const { format } = request.params;
    if (!isFormat(format)) return sendNotFound(request, reply);
    const file = await currentSoaFile(deps, accessOf(request).membership.workspace.id, format);
    if (!file) return sendNotFound(request, reply);
    return sendDownload(
      reply,
      reportFileName('statement-of-applicability', format, deps.clock.now()),
      FILE_TYPES[format],
      file,
    );
  });

  app.get<VersionFileParams>(
    '/soa/versions/:number/files/:format',
    { config: auditorPage },
    async (request, reply) => {
      const { number, format } = request.params;
      if (!isFormat(format) || !isVersionNumber(number)) return sendNotFound(request, reply);
      const workspaceId = accessOf(request).membership.workspace.id;
      const file = await soaVersionFile(deps, workspaceId, Number(number), format);
      if (!file) return sendNotFound(request, reply);
      return sendDownload(
        reply,
        reportFileName('statement-of-applicability', format, Number(number)),
        FILE_TYPES[format],
        file,
      );
    },
  );

  app.post('/soa/approve', { config: { workspaceRole: 'manage' } }, async (request, reply) => {
    const access = accessOf(request);
    const workspaceId = access.membership.workspace.id;
    const approved = await approveSoa(deps, workspaceId, userSourceOf(request, access.user));
    const page = `/w/${workspaceId}/soa`;
    if (approved.ok) return reply.redirect(`${page}?notice=approved`, 303);
    switch (approved.error.code) {
      case 'gaps': {
        const count = approved.error.gaps.length;
        return soaPage(request, reply, {
          status: 409,
          refusal: `Not approved: ${count} excluded control${count === 1 ? ' has' : 's have'} no justification. Justify or include ${count === 1 ? 'it' : 'each'} (listed under “Gaps to close”), then approve.`,
        });
      }
      case 'nothing_to_approve':
        return reply.redirect(`${page}?notice=nothing_to_approve`, 303);
      case 'conflict':
        return reply.redirect(`${page}?notice=conflict`, 303);
      default:
        return sendNotFound(request, reply);
    }
  });

  app.get('/treatment-plan', { config: auditorPage }, async (request, reply) => {
    const base = pageBaseOf(request);
    return sendView(request, reply, 'treatment-plan', {
      title: `Risk treatment plan · ${base.workspace.name}`,
      ...base,
      ...PLAN_VIEW_LABELS,
      plan: await treatmentPlan(deps, base.workspace.id),
    });
  });

  app.get<FormatParams>('/treatment-plan/files/:format', { config: auditorPage }, async (request, reply) => {
    const { format } = request.params;
    if (!isFormat(format)) return sendNotFound(request, reply);
    const file = await treatmentPlanFile(deps, accessOf(request).membership.workspace.id, format);
    if (!file) return sendNotFound(request, reply);
    return sendDownload(
      reply,
      reportFileName('risk-treatment-plan', format, deps.clock.now()),
      FILE_TYPES[format],
      file,
    );
  });
}
