import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  CreatedEvidencePackage,
  CreateEvidencePackageBody,
  EvidencePackage,
  getPackage,
  type OpenedPackage,
  openPackage,
  openPackageByToken,
  type PackageDeps,
  type PackageError,
  type PackageLinks,
  packageFileName,
  recordDownload,
  requestPackage,
  toEvidencePackage,
} from '../../evidence-package/index.ts';
import { attachment, DOWNLOAD_HEADERS } from '../../http/download.ts';
import { problem, sendProblem } from '../../http/problem.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, IdParams } from '../context.ts';
import { responses, sendNotFound } from '../errors.ts';

const tags = ['Evidence packages'];

const ZipBytes = Type.Unsafe<unknown>({
  type: 'string',
  contentMediaType: 'application/zip',
  description: 'The zip, as an attachment.',
});

const TokenParams = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 100, description: 'The token of a download link.' }),
});

/** The time a client should wait before asking again about a package being built. */
const RETRY_AFTER_SECONDS = 2;

function sendPackageError(request: FastifyRequest, reply: FastifyReply, error: PackageError): FastifyReply {
  switch (error.code) {
    case 'invalid_range':
      return sendProblem(reply, problem(request, 400, 'invalid_range', error.detail));
    case 'range_too_long':
      return sendProblem(
        reply,
        problem(
          request,
          400,
          'range_too_long',
          `A package covers at most ${error.maxDays} days; leave out \`from\` and \`to\` for the whole workspace.`,
        ),
      );
    case 'packages_in_progress':
      return sendProblem(
        reply.header('retry-after', 60),
        problem(
          request,
          409,
          'packages_in_progress',
          `This workspace already has ${error.limit} packages being built; try again when one is ready.`,
        ),
      );
  }
}

/** The zip, or why not: 409 while it is built, 410 once it expired or failed. */
function sendOpened(
  request: FastifyRequest,
  reply: FastifyReply,
  opened: OpenedPackage,
  onOpen: () => Promise<void>,
): FastifyReply | Promise<FastifyReply> {
  switch (opened.status) {
    case 'not_ready':
      return sendProblem(
        reply.header('retry-after', RETRY_AFTER_SECONDS),
        problem(request, 409, 'package_not_ready', 'The package is still being built; ask again shortly.'),
      );
    case 'gone':
      return sendProblem(
        reply,
        problem(
          request,
          410,
          opened.row.status === 'failed' ? 'package_failed' : 'package_expired',
          opened.row.status === 'failed'
            ? 'The package could not be built; request a new one.'
            : 'The package has expired and its file was removed; request a new one.',
        ),
      );
    case 'open':
      return onOpen().then(() =>
        reply
          .headers(DOWNLOAD_HEADERS)
          .header('content-type', 'application/zip')
          .header('content-length', Number(opened.row.size))
          .header('content-disposition', attachment(packageFileName(opened.row)))
          .send(opened.stream),
      );
  }
}

export function evidencePackageRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ EvidencePackage, CreatedEvidencePackage, CreateEvidencePackageBody });
  const base = `${deps.config.baseUrl}${app.prefix}`;
  const links: PackageLinks = {
    status: (id) => `${base}/evidence-packages/${id}`,
    file: (id) => `${base}/evidence-packages/${id}/file`,
  };
  const downloadUrl = (token: string) => `${base}/evidence-package-downloads/${token}`;
  const packageDeps: PackageDeps = { db: deps.db, clock: deps.clock, store: deps.evidence.store };

  app.post(
    '/evidence-packages',
    {
      schema: {
        operationId: 'createEvidencePackage',
        summary: 'Request an evidence package (a zip built in the background)',
        description:
          'One zip with the Statement of Applicability and risk treatment plan (current and approved ' +
          "versions), every evidence file added in the range under its control's folder " +
          '(`controls/A.5.1 Policies for information security/...`; evidence of several controls lies in the ' +
          "first one's folder), `evidence.csv` (every piece of evidence, its controls and its place), " +
          "`links.csv` (link evidence) and last `manifest.json` with every file's path, size and SHA-256. " +
          '`from` and `to` are days (UTC, inclusive) on which the evidence was added; leave both out for ' +
          'the whole workspace. `from` after `to`: 400 `invalid_range`; more than three years: 400 ' +
          '`range_too_long`; three packages already being built: 409 `packages_in_progress`. Answers 202: ' +
          'poll `status_url` until `ready`, then GET `file_url` with the API key, or hand `download_url` ' +
          '(no key needed, shown only here) to whoever needs the file. A finished package is kept three days.',
        tags,
        body: CreateEvidencePackageBody,
        response: responses({ 202: CreatedEvidencePackage }, [409]),
      },
    },
    async (request, reply) => {
      const result = await requestPackage(
        packageDeps,
        workspaceOf(request),
        request.body ?? {},
        auditSourceOf(request),
      );
      if (!result.ok) return sendPackageError(request, reply, result.error);
      const { row, token } = result.value;
      return reply
        .code(202)
        .header('location', links.status(row.id))
        .send({ ...toEvidencePackage(row, links), download_url: downloadUrl(token) });
    },
  );

  app.get(
    '/evidence-packages/:id',
    {
      schema: {
        operationId: 'getEvidencePackage',
        summary: 'Get an evidence package: its status and progress',
        tags,
        params: IdParams,
        response: responses({ 200: EvidencePackage }, [404]),
      },
    },
    async (request, reply) => {
      const row = await getPackage(deps.db, workspaceOf(request), request.params.id);
      if (!row) return sendNotFound(request, reply, 'evidence package');
      if (row.status === 'queued' || row.status === 'building')
        reply.header('retry-after', RETRY_AFTER_SECONDS);
      return toEvidencePackage(row, links);
    },
  );

  app.get(
    '/evidence-packages/:id/file',
    {
      schema: {
        operationId: 'downloadEvidencePackage',
        summary: 'Download a ready evidence package',
        description: 'Still being built: 409 `package_not_ready` with `Retry-After`. Expired or failed: 410.',
        tags,
        params: IdParams,
        response: responses({ 200: ZipBytes }, [404, 409, 410]),
      },
    },
    async (request, reply) => {
      const opened = await openPackage(packageDeps, workspaceOf(request), request.params.id);
      if (!opened) return sendNotFound(request, reply, 'evidence package');
      return sendOpened(request, reply, opened, () =>
        recordDownload(deps.db, deps.clock, opened.row, auditSourceOf(request)),
      );
    },
  );

  app.get(
    '/evidence-package-downloads/:token',
    {
      config: { public: true },
      schema: {
        operationId: 'downloadEvidencePackageByLink',
        summary: 'Download an evidence package through its link (no API key)',
        description:
          'The `download_url` a package request answered. Unknown token: 404; still being built: 409; ' +
          'expired: 410.',
        tags,
        params: TokenParams,
        response: responses({ 200: ZipBytes }, [404, 409, 410]),
      },
    },
    async (request, reply) => {
      const opened = await openPackageByToken(packageDeps, request.params.token);
      if (!opened) return sendProblem(reply, problem(request, 404, 'not_found', 'No such download link.'));
      return sendOpened(request, reply, opened, () =>
        recordDownload(deps.db, deps.clock, opened.row, {
          actor: { label: 'Holder of the download link' },
          ip: request.ip,
          userAgent: request.headers['user-agent'] ?? null,
        }),
      );
    },
  );
}
