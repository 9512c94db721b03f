import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { sendDownload } from '../../http/download.ts';
import { problem, sendProblem } from '../../http/problem.ts';
import {
  approveSoa,
  currentSoa,
  currentSoaFile,
  FILE_TYPES,
  getSoaVersion,
  listSoaVersions,
  reportFileName,
  Soa,
  type SoaApprovalError,
  SoaChange,
  SoaControl,
  type SoaFileFormat,
  SoaFileFormatSchema,
  SoaGap,
  SoaVersion,
  SoaVersionSummary,
  soaVersionFile,
  TreatmentPlan,
  TreatmentPlanRisk,
  treatmentPlan,
  treatmentPlanFile,
} from '../../reports/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import type { ApiDeps, ApiScope } from '../context.ts';
import { responses, sendNotFound } from '../errors.ts';
import { asksForCsv } from '../lists.ts';

const FileBytes = Type.Unsafe<unknown>({
  type: 'string',
  contentMediaType: 'application/octet-stream',
  description: 'The file (text/csv, an XLSX workbook or a PDF), always as an attachment.',
});

const VersionNumber = Type.Integer({
  minimum: 1,
  maximum: 2_147_483_647,
  description: 'The version number.',
});
const FormatParams = Type.Object({ format: SoaFileFormatSchema });
const VersionParams = Type.Object({ number: VersionNumber });
const VersionFileParams = Type.Object({ number: VersionNumber, format: SoaFileFormatSchema });
const SoaVersionList = Type.Object(
  { data: Type.Array(SoaVersionSummary, { description: 'Newest first.' }) },
  { description: 'Every approved version; a workspace has a handful, so one answer holds them all.' },
);

/** The Statement of Applicability, its approved versions and the risk treatment plan. */
export function reportRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({
    Soa,
    SoaControl,
    SoaGap,
    SoaChange,
    SoaVersionSummary,
    SoaVersion,
    TreatmentPlan,
    TreatmentPlanRisk,
  });
  const tags = ['Statement of Applicability'];

  async function sendCurrentSoa(request: FastifyRequest, reply: FastifyReply, format: SoaFileFormat) {
    const file = await currentSoaFile(deps, workspaceOf(request), format);
    if (!file) return sendNotFound(request, reply, 'workspace');
    const name = reportFileName('statement-of-applicability', format, deps.clock.now());
    return sendDownload(reply, name, FILE_TYPES[format], file);
  }

  async function sendPlan(request: FastifyRequest, reply: FastifyReply, format: SoaFileFormat) {
    const file = await treatmentPlanFile(deps, workspaceOf(request), format);
    if (!file) return sendNotFound(request, reply, 'workspace');
    const name = reportFileName('risk-treatment-plan', format, deps.clock.now());
    return sendDownload(reply, name, FILE_TYPES[format], file);
  }

  app.get(
    '/soa',
    {
      schema: {
        operationId: 'getSoa',
        summary: 'The Statement of Applicability as the controls stand now',
        description:
          'Computed from the controls at every request: applicability, justification, status, owner and ' +
          'evidence of each Annex A control, the gaps to close before approval, and what changed since ' +
          'the latest approved version. `Accept: text/csv` answers the table as CSV.',
        tags,
        response: responses({ 200: Soa }),
      },
    },
    async (request, reply) => {
      reply.header('vary', 'Accept');
      if (!asksForCsv(request)) return currentSoa(deps, workspaceOf(request));
      return sendCurrentSoa(request, reply, 'csv');
    },
  );

  app.get(
    '/soa/files/:format',
    {
      schema: {
        operationId: 'downloadSoa',
        summary: 'Download the current Statement of Applicability as CSV, XLSX or PDF',
        description:
          "Rendered now, not approved: the PDF's title page says so. Approved versions have their own files.",
        tags,
        params: FormatParams,
        response: responses({ 200: FileBytes }),
      },
    },
    async (request, reply) => sendCurrentSoa(request, reply, request.params.format),
  );

  app.post(
    '/soa/approve',
    {
      schema: {
        operationId: 'approveSoa',
        summary: 'Approve the Statement of Applicability as the next numbered version',
        description:
          'Freezes the SoA as the controls stand now as version N: its content and SHA-256, and its CSV, ' +
          'XLSX and PDF files, which never change afterwards. 409 `soa_has_gaps` while an excluded control ' +
          'has no justification (each is named in `errors`); 409 `nothing_to_approve` when nothing changed ' +
          'since the latest version. Any API key of the workspace may approve, as it may approve policies.',
        tags,
        response: responses({ 201: SoaVersionSummary }, [409]),
      },
    },
    async (request, reply) => {
      const result = await approveSoa(deps, workspaceOf(request), auditSourceOf(request));
      if (result.ok) return reply.code(201).send(result.value);
      return sendApprovalError(request, reply, result.error);
    },
  );

  app.get(
    '/soa/versions',
    {
      schema: {
        operationId: 'listSoaVersions',
        summary: 'List the approved versions of the Statement of Applicability',
        tags,
        response: responses({ 200: SoaVersionList }),
      },
    },
    async (request) => ({ data: await listSoaVersions(deps, workspaceOf(request)) }),
  );

  app.get(
    '/soa/versions/:number',
    {
      schema: {
        operationId: 'getSoaVersion',
        summary: 'Get an approved version with the rows it froze',
        tags,
        params: VersionParams,
        response: responses({ 200: SoaVersion }, [404]),
      },
    },
    async (request, reply) =>
      (await getSoaVersion(deps, workspaceOf(request), request.params.number)) ??
      sendNotFound(request, reply, 'version of the Statement of Applicability'),
  );

  app.get(
    '/soa/versions/:number/files/:format',
    {
      schema: {
        operationId: 'downloadSoaVersion',
        summary: 'Download an approved version as CSV, XLSX or PDF, byte for byte as frozen at approval',
        tags,
        params: VersionFileParams,
        response: responses({ 200: FileBytes }, [404]),
      },
    },
    async (request, reply) => {
      const { number, format } = request.params;
      const file = await soaVersionFile(deps, workspaceOf(request), number, format);
      if (!file) return sendNotFound(request, reply, 'version of the Statement of Applicability');
      return sendDownload(
        reply,
        reportFileName('statement-of-applicability', format, number),
        FILE_TYPES[format],
        file,
      );
    },
  );

  const planTags = ['Risks'];
  app.get(
    '/risk-treatment-plan',
    {
      schema: {
        operationId: 'getRiskTreatmentPlan',
        summary: 'The risk treatment plan: every open risk with its treatment',
        description:
          'Computed from the open risks, most severe first: score before and after treatment, treatment, ' +
          'plan, owner, due date and the controls that treat each. `Accept: text/csv` answers it as CSV.',
        tags: planTags,
        response: responses({ 200: TreatmentPlan }),
      },
    },
    async (request, reply) => {
      reply.header('vary', 'Accept');
      if (!asksForCsv(request)) return treatmentPlan(deps, workspaceOf(request));
      return sendPlan(request, reply, 'csv');
    },
  );

  app.get(
    '/risk-treatment-plan/files/:format',
    {
      schema: {
        operationId: 'downloadRiskTreatmentPlan',
        summary: 'Download the risk treatment plan as CSV, XLSX or PDF',
        tags: planTags,
        params: FormatParams,
        response: responses({ 200: FileBytes }),
      },
    },
    async (request, reply) => {
      const { format } = request.params;
      const file = await treatmentPlanFile(deps, workspaceOf(request), format);
      if (!file) return sendNotFound(request, reply, 'workspace');
      return sendDownload(
        reply,
        reportFileName('risk-treatment-plan', format, deps.clock.now()),
        FILE_TYPES[format],
        file,
      );
    },
  );
}

function sendApprovalError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: SoaApprovalError,
): FastifyReply {
  switch (error.code) {
    case 'gaps':
      return sendProblem(
        reply,
        problem(
          request,
          409,
          'soa_has_gaps',
          `${error.gaps.length} excluded control${error.gaps.length === 1 ? ' has' : 's have'} no justification: justify or include ${error.gaps.length === 1 ? 'it' : 'them'}, then approve.`,
          error.gaps.map((gap) => ({
            path: `controls/${gap.reference}/justification`,
            message: gap.message,
          })),
        ),
      );
    case 'nothing_to_approve':
      return sendProblem(
        reply,
        problem(
          request,
          409,
          'nothing_to_approve',
          `Nothing changed since version ${error.version}: it is the current Statement of Applicability.`,
        ),
      );
    case 'conflict':
      return sendProblem(
        reply,
        problem(
          request,
          409,
          'conflict',
          'Another approval was recorded at the same moment; read the versions and try again.',
        ),
      );
    default:
      return sendNotFound(request, reply, 'workspace');
  }
}
