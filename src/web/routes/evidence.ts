import { finished } from 'node:stream/promises';
import fastifyMultipart from '@fastify/multipart';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { formatBytes, PLAN_ENTITLEMENTS } from '../../catalog/index.ts';
import {
  ACCEPTED_FILE_TYPES,
  type ComplianceError,
  type Control,
  CreateEvidenceLinkBody,
  createFileEvidence,
  createLinkEvidence,
  deleteEvidence,
  discardStaged,
  type Evidence,
  type EvidenceDeps,
  type EvidenceFormPart,
  type EvidenceListFilter,
  EvidenceUploadFields,
  evidenceBytesStored,
  evidenceFileUrl,
  evidenceFormFields,
  evidenceUploadLimits,
  getEvidence,
  listEvidence,
  openEvidenceFile,
  receiveEvidenceForm,
  setEvidenceRetired,
  storageFailureError,
  UpdateEvidenceBody,
  type UploadRefusal,
  updateEvidence,
} from '../../compliance/index.ts';
import { attachment, DOWNLOAD_HEADERS } from '../../http/download.ts';
import { frameworkError, statusOf } from '../../http/errors.ts';
import { canManageWorkspace, lockWorkspace, type Workspace } from '../../workspace/index.ts';
import { userSourceOf } from '../audit.ts';
import { allControls, controlChoices, controlGroups } from '../choices.ts';
import { type FieldError, schemaErrors } from '../form-errors.ts';
import { type FormBody, field, fieldValues, isIdInput } from '../forms.ts';
import { recordHistory } from '../history.ts';
import {
  type ListDefinition,
  type ListFilter,
  listQuerySchema,
  readList,
  sendInvalidListLink,
  sendListCsv,
  withRecordChoices,
} from '../list-page.ts';
import { planLimitRefusal } from '../plan-limit.ts';
import { sendNotFound, sendPage, sendView } from '../render.ts';
import {
  EMPTY_LINK_FORM,
  EVIDENCE_FIELD_ERRORS,
  EVIDENCE_FILTERS,
  type EvidenceForm,
  type EvidenceRow,
  evidenceForm,
  evidenceRows,
  type LinkForm,
  type StorageUse,
  sizeLabel,
} from '../views/evidence.view.ts';
import { accessOf } from '../workspace-scope.ts';
import type { RouteDeps } from './deps.ts';

const PAGE_SIZE = 50;
/** Files one upload form may carry; each is within the REST API's size limit. */
const MAX_FILES_PER_UPLOAD = 5;
/** The upload form's text fields within the parser's limit: the token and one per control. */
const MAX_CONTROLS_AT_UPLOAD = evidenceUploadLimits(0, MAX_FILES_PER_UPLOAD).fields - 1;

type ListQuery = Record<string, string | undefined>;
type EvidenceParams = { Params: { evidenceId: string } };

const NOTICES: Record<string, string> = {
  created: 'Evidence added.',
  uploaded: 'Files added.',
  updated: 'Changes saved.',
  retired: 'Evidence retired: it stays on record, out of the lists.',
  restored: 'Evidence restored to the lists.',
  deleted: 'Evidence deleted.',
};

const NoticeQuery = Type.Object({ notice: Type.Optional(Type.String({ maxLength: 40 })) });

/** The forms as sent: text, bounded; the REST API's schemas then judge the values. */
const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));
const ControlIdsField = Type.Optional(
  Type.Union([
    Type.String({ maxLength: 100 }),
    Type.Array(Type.String({ maxLength: 100 }), { maxItems: 200 }),
  ]),
);
const LinkFormBody = Type.Object({
  title: FormText(1000),
  url: FormText(5000),
  control_ids: ControlIdsField,
});
const EvidenceFormBody = Type.Object({ title: FormText(1000), control_ids: ControlIdsField });
const DeleteFormBody = Type.Object({ confirm: FormText(10) });

const NO_FILES: FieldError = { field: 'file', message: 'Choose one or more files to upload.' };

/** Why an upload's file was refused, in the page's words, with the REST API's status. */
function uploadRefusal(
  refusal: UploadRefusal & { fileName: string },
  maxFileSize: string,
): { status: number; error: FieldError } {
  const name = refusal.fileName || 'A file';
  switch (refusal.code) {
    case 'file_too_large':
      return {
        status: 413,
        error: { field: 'file', message: `${name} is larger than ${maxFileSize}; no file was added.` },
      };
    case 'empty_file':
      // A browser sends an empty, unnamed file when none was chosen.
      if (!refusal.fileName) return { status: 400, error: NO_FILES };
      return { status: 400, error: { field: 'file', message: `${name} is empty; no file was added.` } };
    case 'unsupported_file_type':
      return {
        status: 415,
        error: {
          field: 'file',
          message: `${name} is not a type of file accepted as evidence${refusal.detected ? ` (${refusal.detected})` : ''}; no file was added.`,
        },
      };
    case 'incomplete_upload':
      return {
        status: 400,
        error: {
          field: 'file',
          message: 'The upload broke off before its end; no file was added. Send it again.',
        },
      };
  }
}

/**
 * Evidence: every member lists it (filters, CSV), adds links and files, relinks, retires,
 * restores, deletes and downloads it, through the same functions as `/api/v1/evidence`: the same
 * upload limits, detected types, storage backend and plan storage, the same audit trail and
 * webhooks. Files are uploaded through a multipart route of their own (the app's other forms
 * stay url-encoded), streamed to the store as they arrive.
 */
export function evidenceRoutes(app: FastifyInstance, deps: RouteDeps): void {
  const maxFileBytes = deps.config.api.evidenceMaxBytes;
  const maxFileSize = sizeLabel(maxFileBytes);
  const evidenceDeps = (request: FastifyRequest): EvidenceDeps => ({
    db: deps.db,
    clock: deps.clock,
    store: deps.evidence.store,
    failpoints: deps.evidence.failpoints,
    lockWorkspace,
    downloadUrl: (id) => evidenceFileUrl(deps.config.baseUrl, id),
    log: request.log,
  });

  function evidenceList(request: FastifyRequest, controls: Control[]): ListDefinition<EvidenceRow> {
    return {
      name: 'evidence',
      fields: EVIDENCE_FILTERS,
      pageSize: PAGE_SIZE,
      read: async (workspaceId, filter, page) => {
        const listed = await listEvidence(evidenceDeps(request), workspaceId, domainFilter(filter), page);
        return { items: evidenceRows(listed.items, controls), next: listed.next };
      },
      csv: {
        header: [
          'title',
          'kind',
          'url',
          'file_name',
          'file_size',
          'content_type',
          'sha256',
          'controls',
          'created_at',
          'retired_at',
          'id',
        ],
        row: (evidence) => [
          evidence.title,
          evidence.kind,
          evidence.url,
          evidence.file?.name,
          evidence.file?.size,
          evidence.file?.content_type,
          evidence.file?.sha256,
          evidence.controls.map((control) => control.reference).join(' '),
          evidence.created_at,
          evidence.retired_at,
          evidence.id,
        ],
      },
    };
  }
  const querystring = listQuerySchema({ name: 'evidence', fields: EVIDENCE_FILTERS });
  /** The list and its CSV, which an external auditor reads too. */
  const auditorReads = { schema: { querystring }, config: { auditorMayRead: true } };
  const fileReads = { config: { auditorMayRead: true } };

  async function storageUse(workspace: Workspace): Promise<StorageUse> {
    return {
      used: sizeLabel(await evidenceBytesStored(deps.db, workspace.id)),
      limit: formatBytes(PLAN_ENTITLEMENTS[workspace.plan].evidenceStorageBytes),
    };
  }

  async function newEvidencePage(
    request: FastifyRequest,
    reply: FastifyReply,
    extra: {
      link?: LinkForm;
      fileControlIds?: string[];
      errors?: FieldError[];
      errorsOf?: 'link' | 'files';
      status?: number;
    } = {},
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'evidence-new',
      {
        title: `Add evidence · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        controlGroups: controlGroups(await allControls(deps, workspace.id)),
        link: extra.link ?? EMPTY_LINK_FORM,
        fileControlIds: extra.fileControlIds ?? [],
        errors,
        errorsOf: extra.errorsOf,
        limits: {
          maxFileSize,
          maxFiles: MAX_FILES_PER_UPLOAD,
          maxControls: MAX_CONTROLS_AT_UPLOAD,
          acceptedTypes: ACCEPTED_FILE_TYPES.join(', '),
        },
        storage: await storageUse(workspace),
      },
      extra.status ?? (errors.length > 0 ? 400 : 200),
    );
  }

  async function evidencePage(
    request: FastifyRequest,
    reply: FastifyReply,
    evidence: Evidence,
    extra: { form?: EvidenceForm; errors?: FieldError[]; notice?: string; status?: number } = {},
  ) {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const controls = await allControls(deps, workspace.id);
    const [row] = evidenceRows([evidence], controls);
    if (!row) throw new Error('evidence has a row');
    const errors = extra.errors ?? [];
    return sendView(
      request,
      reply,
      'evidence-record',
      {
        title: `${evidence.title} · Evidence · ${workspace.name}`,
        workspace,
        canManage: canManageWorkspace(membership.role),
        evidence: row,
        form: extra.form ?? evidenceForm(evidence),
        controlGroups: controlGroups(controls),
        downloadUrl: evidence.file ? `/w/${workspace.id}/evidence/${evidence.id}/file` : null,
        errors,
        history: await recordHistory(deps, workspace.id, evidence.id),
        notice: extra.notice,
      },
      extra.status ?? (errors.length > 0 ? 400 : 200),
    );
  }

  async function evidenceOf(request: FastifyRequest<EvidenceParams>) {
    const { evidenceId } = request.params;
    if (!isIdInput(evidenceId)) return undefined;
    return getEvidence(evidenceDeps(request), accessOf(request).membership.workspace.id, evidenceId);
  }

  function controlRefusal(error: ComplianceError): FieldError {
    if (error.code === 'reference_not_found') return EVIDENCE_FIELD_ERRORS.control_ids as FieldError;
    return { message: 'The evidence could not be saved; try again.' };
  }

  app.get<{ Querystring: ListQuery }>('/evidence', auditorReads, async (request, reply) => {
    const { membership } = accessOf(request);
    const { workspace } = membership;
    const controls = await allControls(deps, workspace.id);
    const list = evidenceList(request, controls);
    const view = await readList(
      { ...list, fields: withRecordChoices(list.fields, { control_id: controlChoices(controls) }) },
      workspace.id,
      request.query,
    );
    if (!view) return sendInvalidListLink(request, reply);
    const notice = request.query.notice;
    return sendView(request, reply, 'evidence', {
      title: `Evidence · ${workspace.name}`,
      workspace,
      canManage: canManageWorkspace(membership.role),
      list: view,
      storage: await storageUse(workspace),
      notice: notice ? NOTICES[notice] : undefined,
    });
  });

  app.get<{ Querystring: ListQuery }>('/evidence.csv', auditorReads, async (request, reply) => {
    const workspaceId = accessOf(request).membership.workspace.id;
    const controls = await allControls(deps, workspaceId);
    return sendListCsv(reply, evidenceList(request, controls), workspaceId, request.query);
  });

  app.get('/evidence/new', async (request, reply) => newEvidencePage(request, reply));

  app.post<{ Body: FormBody }>(
    '/evidence/links',
    { schema: { body: LinkFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const link: LinkForm = {
        title: field(request, 'title'),
        url: field(request, 'url'),
        control_ids: fieldValues(request, 'control_ids'),
      };
      const body = { title: link.title.trim(), url: link.url.trim(), control_ids: link.control_ids };
      const invalid = schemaErrors(CreateEvidenceLinkBody, body, EVIDENCE_FIELD_ERRORS);
      if (invalid.length > 0)
        return newEvidencePage(request, reply, { link, errors: invalid, errorsOf: 'link' });
      const workspaceId = access.membership.workspace.id;
      const created = await createLinkEvidence(
        evidenceDeps(request),
        workspaceId,
        body,
        userSourceOf(request, access.user),
      );
      if (!created.ok) {
        return newEvidencePage(request, reply, {
          link,
          errors: [controlRefusal(created.error)],
          errorsOf: 'link',
        });
      }
      return reply.redirect(`/w/${workspaceId}/evidence/${created.value.id}?notice=created`, 303);
    },
  );

  app.register(async (upload) => {
    await upload.register(fastifyMultipart, {
      limits: evidenceUploadLimits(maxFileBytes, MAX_FILES_PER_UPLOAD),
    });
    const pendingParts = new WeakMap<FastifyRequest, AsyncIterator<EvidenceFormPart>>();
    // The form's token is its first part: read before the cross-site check (a pre-handler), which
    // needs it, and before any file is stored. The rest is read by the handler as it streams.
    upload.addHook('preValidation', async (request) => {
      if (!request.isMultipart()) return;
      const parts = request.parts();
      request.body = {};
      let first: IteratorResult<EvidenceFormPart>;
      try {
        first = await parts.next();
      } catch {
        return;
      }
      if (!first.done && first.value.type === 'field' && first.value.fieldname === '_csrf') {
        request.body = { _csrf: String(first.value.value) };
        pendingParts.set(request, parts);
        return;
      }
      // Not one of our forms: read it to its end, keeping nothing, so the refusal is heard.
      let part: IteratorResult<EvidenceFormPart> | undefined = first;
      while (part && !part.done) {
        if (part.value.type === 'file') await finished(part.value.file.resume()).catch(() => {});
        part = await parts.next().catch(() => undefined);
      }
    });

    upload.post('/evidence/files', async (request, reply) => {
      const access = accessOf(request);
      const workspaceId = access.membership.workspace.id;
      const parts = pendingParts.get(request);
      if (!parts) return newEvidencePage(request, reply, { errors: [NO_FILES], errorsOf: 'files' });
      const files = evidenceDeps(request);
      const form = await receiveEvidenceForm(parts, files.store, workspaceId);
      if (form.storageFailure) {
        const failure = storageFailureError(request.log, form.storageFailure, files.store.kind, workspaceId);
        if (failure.code === 'storage_unavailable')
          reply.header('retry-after', String(failure.retryAfterSeconds));
        return sendPage(
          request,
          reply,
          'error',
          {
            title: 'Files not stored',
            heading: 'The files could not be stored',
            message:
              failure.code === 'insufficient_storage'
                ? 'The service has run out of storage space, so no file was added. Its operators have been told; try again later.'
                : 'The file store cannot be reached at the moment, so no file was added. Try again in a minute.',
            errorCode: failure.code,
          },
          statusOf(failure),
        );
      }
      const fields = evidenceFormFields(form.fields);
      const chosen = Array.isArray(fields.control_ids) ? fields.control_ids.map(String) : [];
      const refused = (status: number, error: FieldError) =>
        newEvidencePage(request, reply, {
          fileControlIds: chosen,
          errors: [error],
          errorsOf: 'files',
          status,
        });
      if (form.unreadable) {
        const known = 'code' in form.unreadable ? frameworkError(form.unreadable as FastifyError) : undefined;
        if (known?.code === 'file_too_large') {
          return refused(413, {
            field: 'file',
            message: `A file is larger than ${maxFileSize}; no file was added.`,
          });
        }
        if (known?.code === 'too_many_parts') {
          return refused(413, {
            field: 'file',
            message: `Send at most ${MAX_FILES_PER_UPLOAD} files and ${MAX_CONTROLS_AT_UPLOAD} controls at once; no file was added.`,
          });
        }
        return refused(400, {
          field: 'file',
          message: 'The form arrived incomplete; no file was added. Choose the files and send it again.',
        });
      }
      if (form.refusal) {
        const { status, error } = uploadRefusal(form.refusal, maxFileSize);
        return refused(status, error);
      }
      const invalid = [
        ...schemaErrors(EvidenceUploadFields, { control_ids: chosen }, EVIDENCE_FIELD_ERRORS),
        ...(form.staged.length === 0 || form.strayFiles.length > 0 ? [NO_FILES] : []),
      ];
      if (invalid.length > 0) {
        for (const staged of form.staged) await discardStaged(files.store, staged);
        return newEvidencePage(request, reply, {
          fileControlIds: chosen,
          errors: invalid,
          errorsOf: 'files',
        });
      }
      const source = userSourceOf(request, access.user);
      const added: Evidence[] = [];
      for (const [index, staged] of form.staged.entries()) {
        const created = await createFileEvidence(files, workspaceId, { control_ids: chosen }, staged, source);
        if (created.ok) {
          added.push(created.value);
          continue;
        }
        for (const rest of form.staged.slice(index + 1)) await discardStaged(files.store, rest);
        const kept =
          added.length === 0
            ? 'No file was added'
            : `${added.map((evidence) => evidence.title).join(', ')} ${added.length === 1 ? 'was' : 'were'} added; ${staged.name} and the files after it were not`;
        if (created.error.code === 'plan_limit_reached') {
          const limit = planLimitRefusal(deps.config.baseUrl, workspaceId, created.error);
          return refused(limit.status, { field: 'file', message: `${kept}. ${limit.message}` });
        }
        return refused(400, {
          ...controlRefusal(created.error),
          message: `${kept}. ${controlRefusal(created.error).message}`,
        });
      }
      const [only] = added;
      if (added.length === 1 && only) {
        return reply.redirect(`/w/${workspaceId}/evidence/${only.id}?notice=uploaded`, 303);
      }
      return reply.redirect(`/w/${workspaceId}/evidence?notice=uploaded`, 303);
    });
  });

  app.get<EvidenceParams & { Querystring: { notice?: string } }>(
    '/evidence/:evidenceId',
    { schema: { querystring: NoticeQuery }, config: { auditorMayRead: true } },
    async (request, reply) => {
      const evidence = await evidenceOf(request);
      if (!evidence) return sendNotFound(request, reply);
      const notice = request.query.notice;
      return evidencePage(request, reply, evidence, { notice: notice ? NOTICES[notice] : undefined });
    },
  );

  app.post<EvidenceParams & { Body: FormBody }>(
    '/evidence/:evidenceId',
    { schema: { body: EvidenceFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const evidence = await evidenceOf(request);
      if (!evidence) return sendNotFound(request, reply);
      const form: EvidenceForm = {
        title: field(request, 'title'),
        control_ids: fieldValues(request, 'control_ids'),
      };
      const body = { title: form.title.trim(), control_ids: form.control_ids };
      const invalid = schemaErrors(UpdateEvidenceBody, body, EVIDENCE_FIELD_ERRORS);
      if (invalid.length > 0) return evidencePage(request, reply, evidence, { form, errors: invalid });
      const workspaceId = access.membership.workspace.id;
      const updated = await updateEvidence(
        evidenceDeps(request),
        workspaceId,
        evidence.id,
        body,
        userSourceOf(request, access.user),
      );
      if (!updated.ok) {
        if (updated.error.code === 'not_found') return sendNotFound(request, reply);
        return evidencePage(request, reply, evidence, { form, errors: [controlRefusal(updated.error)] });
      }
      return reply.redirect(`/w/${workspaceId}/evidence/${evidence.id}?notice=updated`, 303);
    },
  );

  for (const [action, retired] of [
    ['retire', true],
    ['restore', false],
  ] as const) {
    app.post<EvidenceParams>(`/evidence/:evidenceId/${action}`, async (request, reply) => {
      const access = accessOf(request);
      const evidence = await evidenceOf(request);
      if (!evidence) return sendNotFound(request, reply);
      const workspaceId = access.membership.workspace.id;
      const result = await setEvidenceRetired(
        evidenceDeps(request),
        workspaceId,
        evidence.id,
        retired,
        userSourceOf(request, access.user),
      );
      if (!result.ok) return sendNotFound(request, reply);
      const notice = retired ? 'retired' : 'restored';
      return reply.redirect(`/w/${workspaceId}/evidence/${evidence.id}?notice=${notice}`, 303);
    });
  }

  app.post<EvidenceParams & { Body: FormBody }>(
    '/evidence/:evidenceId/delete',
    { schema: { body: DeleteFormBody } },
    async (request, reply) => {
      const access = accessOf(request);
      const evidence = await evidenceOf(request);
      if (!evidence) return sendNotFound(request, reply);
      if (field(request, 'confirm') !== 'yes') {
        return evidencePage(request, reply, evidence, {
          errors: [{ field: 'confirm', message: 'Tick the box to confirm the deletion.' }],
        });
      }
      const workspaceId = access.membership.workspace.id;
      const deleted = await deleteEvidence(
        evidenceDeps(request),
        workspaceId,
        evidence.id,
        userSourceOf(request, access.user),
      );
      if (!deleted.ok) return sendNotFound(request, reply);
      return reply.redirect(`/w/${workspaceId}/evidence?notice=deleted`, 303);
    },
  );

  app.get<EvidenceParams>('/evidence/:evidenceId/file', fileReads, async (request, reply) => {
    const { evidenceId } = request.params;
    if (!isIdInput(evidenceId)) return sendNotFound(request, reply);
    const workspaceId = accessOf(request).membership.workspace.id;
    const opened = await openEvidenceFile(evidenceDeps(request), workspaceId, evidenceId);
    if (!opened) return sendNotFound(request, reply);
    const { file, stream } = opened;
    const charset = file.content_type.startsWith('text/') ? '; charset=utf-8' : '';
    return reply
      .headers(DOWNLOAD_HEADERS)
      .header('content-type', `${file.content_type}${charset}`)
      .header('content-length', file.size)
      .header('content-disposition', attachment(file.name))
      .send(stream);
  });
}

/** The list's filters as the domain takes them. */
function domainFilter(filter: ListFilter): EvidenceListFilter {
  const show = filter.show;
  return {
    ...(filter.q ? { q: filter.q } : {}),
    ...(filter.control_id ? { control_id: filter.control_id } : {}),
    ...(filter.kind === 'link' || filter.kind === 'file' ? { kind: filter.kind } : {}),
    ...(filter.since ? { since: `${filter.since}T00:00:00.000Z` } : {}),
    retired: show === 'retired' ? 'true' : show === 'all' ? 'all' : 'false',
  };
}
