import fastifyMultipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import {
  ACCEPTED_FILE_TYPES,
  CreateEvidenceLinkBody,
  createLinkEvidence,
  deleteEvidence,
  Evidence,
  type EvidenceDeps,
  EvidenceFile,
  EvidenceFilter,
  EvidenceUploadForm,
  evidenceFileUrl,
  evidenceUploadLimits,
  getEvidence,
  listEvidence,
  openEvidenceFile,
  setEvidenceRetired,
  UpdateEvidenceBody,
  updateEvidence,
} from '../../compliance/index.ts';
import { attachment, DOWNLOAD_HEADERS } from '../../http/download.ts';
import { problem, sendProblem } from '../../http/problem.ts';
import { lockWorkspace } from '../../workspace/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import type { SchemaCatalog } from '../catalog.ts';
import { type ApiDeps, type ApiScope, DeletedRecord, IdParams } from '../context.ts';
import { NoContent, responses, sendComplianceError, sendNotFound } from '../errors.ts';
import { answerList } from '../lists.ts';
import { listQuery, pageOf } from '../pagination.ts';
import { uploadEvidence } from './evidence-upload.ts';

const tags = ['Evidence'];

const FileBytes = Type.Unsafe<unknown>({
  type: 'string',
  contentMediaType: 'application/octet-stream',
  description: 'The bytes, served as `file.content_type`, always as an attachment.',
});

export function evidenceRoutes(app: ApiScope, deps: ApiDeps, catalog: SchemaCatalog): void {
  catalog.name({ Evidence, EvidenceFile, CreateEvidenceLinkBody, EvidenceUploadForm, UpdateEvidenceBody });
  catalog.events(Evidence, 'evidence.created', 'evidence.updated', 'evidence.retired', 'evidence.restored');
  catalog.events(DeletedRecord, 'evidence.deleted');
  const downloadUrl = (id: string) => evidenceFileUrl(deps.config.baseUrl, id);
  const evidenceDeps = (request: FastifyRequest): EvidenceDeps => ({
    db: deps.db,
    clock: deps.clock,
    store: deps.evidence.store,
    failpoints: deps.evidence.failpoints,
    lockWorkspace,
    downloadUrl,
    log: request.log,
  });

  app.get(
    '/evidence',
    {
      schema: {
        operationId: 'listEvidence',
        summary: 'List evidence, newest first',
        description:
          '`since` keeps evidence created at or after a time; `control_id` keeps the evidence of one control. ' +
          'Retired evidence is left out unless `retired` is `true` (only retired) or `all`.',
        tags,
        querystring: listQuery(EvidenceFilter),
        response: responses({ 200: pageOf(Evidence) }),
      },
    },
    async (request, reply) =>
      answerList(request, reply, 'evidence', request.query, (workspaceId, filter, page) =>
        listEvidence(evidenceDeps(request), workspaceId, filter, page),
      ),
  );

  // The one route of the API that takes a form: the plugin's hooks would cost every other request.
  app.register(async (upload: ApiScope) => {
    await upload.register(fastifyMultipart, {
      limits: evidenceUploadLimits(deps.config.api.evidenceMaxBytes, 1),
    });
    upload.post<{ Body: CreateEvidenceLinkBody | undefined }>(
      '/evidence',
      {
        config: { multipartBody: EvidenceUploadForm },
        schema: {
          operationId: 'createEvidence',
          summary: 'Report evidence: a link (JSON) or a file (multipart/form-data)',
          description:
            'A link is never fetched. A file is sent as the `file` part of a form, with an optional ' +
            '`title` (default: the file name) and `control_ids` (repeat the field, or separate ids ' +
            `with commas). Its type is detected from its bytes; accepted: ${ACCEPTED_FILE_TYPES.join(', ')}. ` +
            `Larger than ${deps.config.api.evidenceMaxBytes} bytes: 413. Another type: 415. Beyond the ` +
            "plan's evidence storage: 403 `plan_limit_reached`. A file the service cannot store, for " +
            'want of room: 507 `insufficient_storage`; for a failure that may pass: 503 ' +
            '`storage_unavailable` with `Retry-After`. Neither keeps anything: send the file again.',
          tags,
          body: { content: { 'application/json': { schema: CreateEvidenceLinkBody } } },
          response: responses({ 201: Evidence }, [403, 404, 413, 415, 503, 507]),
        },
      },
      async (request, reply) => {
        if (request.isMultipart()) {
          return uploadEvidence(request, reply, evidenceDeps(request), deps.config.api.evidenceMaxBytes);
        }
        // A POST with no body at all (no content type to parse) is neither a link nor a file.
        if (request.mediaType !== 'application/json' || request.body === undefined) {
          const detail = 'Send a link as application/json or a file as multipart/form-data.';
          return sendProblem(reply, problem(request, 415, 'unsupported_media_type', detail));
        }
        const result = await createLinkEvidence(
          evidenceDeps(request),
          workspaceOf(request),
          request.body,
          auditSourceOf(request),
        );
        if (!result.ok) return sendComplianceError(request, reply, result.error, 'evidence');
        return reply.code(201).send(result.value);
      },
    );
  });

  app.get(
    '/evidence/:id',
    {
      schema: {
        operationId: 'getEvidence',
        summary: 'Get evidence',
        description: 'Retired evidence too, with its `retired_at`.',
        tags,
        params: IdParams,
        response: responses({ 200: Evidence }, [404]),
      },
    },
    async (request, reply) =>
      (await getEvidence(evidenceDeps(request), workspaceOf(request), request.params.id)) ??
      sendNotFound(request, reply, 'evidence'),
  );

  app.get(
    '/evidence/:id/file',
    {
      schema: {
        operationId: 'downloadEvidenceFile',
        summary: 'Download the file of file evidence',
        description: 'Link evidence has no file: 404.',
        tags,
        params: IdParams,
        response: responses({ 200: FileBytes }, [404]),
      },
    },
    async (request, reply) => {
      const opened = await openEvidenceFile(evidenceDeps(request), workspaceOf(request), request.params.id);
      if (!opened) return sendNotFound(request, reply, 'evidence file');
      const { file, stream } = opened;
      const charset = file.content_type.startsWith('text/') ? '; charset=utf-8' : '';
      return reply
        .headers(DOWNLOAD_HEADERS)
        .header('content-type', `${file.content_type}${charset}`)
        .header('content-length', file.size)
        .header('content-disposition', attachment(file.name))
        .send(stream);
    },
  );

  app.patch(
    '/evidence/:id',
    {
      schema: {
        operationId: 'updateEvidence',
        summary: 'Retitle evidence or change the controls it supports',
        description: 'The link or file itself does not change: report new evidence instead.',
        tags,
        params: IdParams,
        body: UpdateEvidenceBody,
        response: responses({ 200: Evidence }, [404]),
      },
    },
    async (request, reply) => {
      const result = await updateEvidence(
        evidenceDeps(request),
        workspaceOf(request),
        request.params.id,
        request.body,
        auditSourceOf(request),
      );
      return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'evidence');
    },
  );

  for (const [action, retired] of [
    ['retire', true],
    ['restore', false],
  ] as const) {
    app.post(
      `/evidence/:id/${action}`,
      {
        schema: {
          operationId: retired ? 'retireEvidence' : 'restoreEvidence',
          summary: retired
            ? 'Retire evidence: keep it and its file, leave it out of lists'
            : 'Restore retired evidence to the lists',
          description: retired
            ? 'For evidence that no longer shows a control is in place but should stay on record. ' +
              'Sets `retired_at`; `GET /evidence` leaves it out unless `retired` asks for it. ' +
              'Retiring retired evidence changes nothing.'
            : 'Clears `retired_at`. Restoring current evidence changes nothing.',
          tags,
          params: IdParams,
          response: responses({ 200: Evidence }, [404]),
        },
      },
      async (request, reply) => {
        const result = await setEvidenceRetired(
          evidenceDeps(request),
          workspaceOf(request),
          request.params.id,
          retired,
          auditSourceOf(request),
        );
        return result.ok ? result.value : sendComplianceError(request, reply, result.error, 'evidence');
      },
    );
  }

  app.delete(
    '/evidence/:id',
    {
      schema: {
        operationId: 'deleteEvidence',
        summary: 'Delete evidence and its file',
        tags,
        params: IdParams,
        response: responses({ 204: NoContent }, [404]),
      },
    },
    async (request, reply) => {
      const result = await deleteEvidence(
        evidenceDeps(request),
        workspaceOf(request),
        request.params.id,
        auditSourceOf(request),
      );
      if (!result.ok) return sendComplianceError(request, reply, result.error, 'evidence');
      return reply.code(204).send(null);
    },
  );
}
