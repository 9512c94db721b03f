import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Multipart } from '@fastify/multipart';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import {
  ACCEPTED_FILE_TYPES,
  createFileEvidence,
  discardStaged,
  type EvidenceDeps,
  EvidenceUploadFields,
  type StagedFile,
  stageUpload,
  type UploadRefusal,
} from '../../compliance/index.ts';
import { frameworkError, type ServiceError, sendServiceError } from '../../http/errors.ts';
import {
  fieldErrors,
  invalidRequest,
  malformedMultipart,
  PROBLEM_ERRORS,
  type Problem,
  problem,
  sendProblem,
} from '../../http/problem.ts';
import { compiledSchema, validationIssues } from '../../http/validation.ts';
import { type FileStore, type FileStoreKind, StorageFailure } from '../../storage/index.ts';
import { auditSourceOf, workspaceOf } from '../auth.ts';
import { sendComplianceError } from '../errors.ts';

const FILE_FIELD = 'file';
const checkFields = compiledSchema(EvidenceUploadFields);

/** How long a client waits before trying a store that failed for now (a database or S3 restarting). */
const STORAGE_RETRY_AFTER_SECONDS = 30;

interface ReceivedForm {
  /** The values of each text field, in the order they came. */
  fields: Map<string, unknown[]>;
  staged?: StagedFile;
  refusal?: UploadRefusal;
  /** The store could not take the file (full, or unavailable for now); nothing of it was kept. */
  storageFailure?: StorageFailure;
  /** Names of file parts other than `file`; their bytes were read and dropped. */
  strayFiles: string[];
  /** Why the multipart parser could not read the body to its end, when it could not. */
  unreadable?: FastifyError | Error;
}

/**
 * The multipart form of POST /evidence. The file is streamed to the store as it arrives (the text
 * fields may come before or after it), then the fields are checked; a refused form leaves no file.
 */
export async function uploadEvidence(
  request: FastifyRequest,
  reply: FastifyReply,
  deps: EvidenceDeps,
  maxBytes: number,
): Promise<FastifyReply> {
  const workspaceId = workspaceOf(request);
  const form = await receiveForm(request, deps.store, workspaceId);
  if (form.storageFailure) {
    const failure = storageFailed(request, form.storageFailure, deps.store.kind, workspaceId);
    return sendServiceError(request, reply, PROBLEM_ERRORS, failure);
  }
  if (form.unreadable)
    return sendServiceError(request, reply, PROBLEM_ERRORS, unreadableForm(form.unreadable));
  if (form.refusal) return sendProblem(reply, refusalProblem(request, form.refusal, maxBytes));
  const fields = formFields(form.fields);
  const errors = [
    ...fieldErrors(validationIssues(checkFields.Errors(fields)), 'body'),
    ...form.strayFiles.map((name) => ({ path: `body/${name}`, message: 'is not a known field' })),
    ...(form.staged ? [] : [{ path: `body/${FILE_FIELD}`, message: 'is required' }]),
  ];
  if (!form.staged || errors.length > 0 || !checkFields.Check(fields)) {
    if (form.staged) await discardStaged(deps.store, form.staged);
    return sendProblem(reply, invalidRequest(request, errors));
  }
  const result = await createFileEvidence(deps, workspaceId, fields, form.staged, auditSourceOf(request));
  if (!result.ok) return sendComplianceError(request, reply, result.error, 'evidence');
  return reply.code(201).send(result.value);
}

/**
 * Reads the parts in order. The parser refuses a body as a whole (no boundary, a part cut off or
 * with broken headers, a second file, too many parts) when it gets there, possibly after the file
 * was staged: then the staged file is removed and nothing else of the form is used.
 */
async function receiveForm(
  request: FastifyRequest,
  store: FileStore,
  workspaceId: string,
): Promise<ReceivedForm> {
  const form: ReceivedForm = { fields: new Map(), strayFiles: [] };
  const parts = request.parts();
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await parts.next();
    } catch (error) {
      form.unreadable = error as Error;
      break;
    }
    if (next.done) break;
    const part = next.value;
    if (part.type === 'field') {
      form.fields.set(part.fieldname, [...(form.fields.get(part.fieldname) ?? []), part.value]);
    } else if (part.fieldname !== FILE_FIELD) {
      form.strayFiles.push(part.fieldname);
      await drain(part.file, form);
    } else {
      try {
        const staged = await stageUpload(store, workspaceId, part.file, part.filename);
        if (staged.ok) form.staged = staged.value;
        else form.refusal = staged.error;
      } catch (error) {
        // The rest of the file is read and dropped, so the client hears the answer and can send
        // another request on the connection.
        await drain(part.file, form);
        if (!(error instanceof StorageFailure)) throw error;
        form.storageFailure = error;
      }
    }
    if (form.unreadable || form.refusal?.code === 'incomplete_upload') break;
  }
  if (form.staged && (form.unreadable || form.refusal)) {
    await discardStaged(store, form.staged);
    form.staged = undefined;
  }
  return form;
}

/** Reads a file part to its end, dropping its bytes. */
async function drain(file: Readable, form: ReceivedForm): Promise<void> {
  await finished(file.resume()).catch((error: Error) => {
    form.unreadable = error;
  });
}

/** `control_ids` may be repeated and comma-separated; any other field is one value. */
function formFields(values: Map<string, unknown[]>): Record<string, unknown> {
  return Object.fromEntries(
    [...values].map(([name, list]) => {
      if (name !== 'control_ids') return [name, list.length === 1 ? list[0] : list];
      const ids = list.flatMap((value) => (typeof value === 'string' ? value.split(',') : [value]));
      return [name, ids.map((id) => (typeof id === 'string' ? id.trim() : id)).filter((id) => id !== '')];
    }),
  );
}

/** The parser's limits keep their own answers (413); anything else it refused is a malformed body. */
function unreadableForm(error: FastifyError | Error): ServiceError {
  return ('code' in error && frameworkError(error as FastifyError)) || { code: 'invalid_multipart' };
}

/**
 * A store that is full or failing, logged once at error level (the operator hears of a full disk
 * from nothing else) and answered as our failure, which the client may retry, never as its own.
 */
function storageFailed(
  request: FastifyRequest,
  failure: StorageFailure,
  backend: FileStoreKind,
  workspaceId: string,
): ServiceError {
  request.log.error(
    { event: 'evidence.storage_failed', failure: failure.kind, backend, workspaceId, err: failure.cause },
    'evidence file could not be stored',
  );
  return failure.kind === 'full'
    ? { code: 'insufficient_storage' }
    : { code: 'storage_unavailable', retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS };
}

function refusalProblem(request: FastifyRequest, refusal: UploadRefusal, maxBytes: number): Problem {
  switch (refusal.code) {
    case 'incomplete_upload':
      return malformedMultipart(request);
    case 'file_too_large':
      return problem(
        request,
        413,
        'file_too_large',
        `The file is larger than the limit of ${maxBytes} bytes.`,
      );
    case 'empty_file':
      return invalidRequest(request, [{ path: `body/${FILE_FIELD}`, message: 'is empty' }]);
    case 'unsupported_file_type': {
      const detected = refusal.detected ? ` (${refusal.detected})` : '';
      return problem(
        request,
        415,
        'unsupported_file_type',
        `This type of file${detected} is not accepted as evidence. Accepted: ${ACCEPTED_FILE_TYPES.join(', ')}.`,
      );
    }
  }
}
