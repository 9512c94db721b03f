import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { FastifyBaseLogger } from 'fastify';
import type { ServiceError } from '../http/errors.ts';
import { type FileStore, type FileStoreKind, StorageFailure } from '../storage/index.ts';
import { discardStaged, type StagedFile, stageUpload, type UploadRefusal } from './evidence-files.ts';

/** The form field that carries the files of an evidence upload. */
export const EVIDENCE_FILE_FIELD = 'file';

/**
 * The multipart parser's limits for an evidence upload, the REST API's and the app's alike: the
 * largest file (EVIDENCE_MAX_BYTES), how much text comes with it, and how many files one form
 * may carry (the API takes one, the app several).
 */
export function evidenceUploadLimits(maxFileBytes: number, files: number) {
  return { fileSize: maxFileBytes, files, fields: 20, fieldSize: 64 * 1024, parts: 25 };
}

/** A part of a multipart form, as the parser hands it over. */
export type EvidenceFormPart =
  | { type: 'field'; fieldname: string; value: unknown }
  | {
      type: 'file';
      fieldname: string;
      /** Absent when the part's header names none (a client other than a browser). */
      filename: string | undefined;
      file: Readable & { readonly truncated?: boolean };
    };

export interface ReceivedEvidenceForm {
  /** The values of each text field, in the order they came. */
  fields: Map<string, unknown[]>;
  /** The files of the `file` field, staged in the order they came. */
  staged: StagedFile[];
  /** Why a file was refused, and which; then no file of the form is kept. */
  refusal?: UploadRefusal & { fileName: string };
  /** The store could not take a file (full, or unavailable for now); nothing of the form was kept. */
  storageFailure?: StorageFailure;
  /** Names of file parts other than `file`; their bytes were read and dropped. */
  strayFiles: string[];
  /** Why the multipart parser could not read the body to its end, when it could not. */
  unreadable?: Error;
}

/**
 * Reads an evidence upload's parts in order, streaming each file of the `file` field to the store
 * as it arrives (the text fields may come before or after). The parser refuses a body as a whole
 * (no boundary, a part cut off or with broken headers, too many files or parts) when it gets
 * there, possibly after files were staged; then, as after a refused file, every staged file is
 * removed and nothing else of the form is used.
 */
export async function receiveEvidenceForm(
  parts: AsyncIterator<EvidenceFormPart>,
  store: FileStore,
  workspaceId: string,
): Promise<ReceivedEvidenceForm> {
  const form: ReceivedEvidenceForm = { fields: new Map(), staged: [], strayFiles: [] };
  for (;;) {
    let next: IteratorResult<EvidenceFormPart>;
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
    } else if (part.fieldname !== EVIDENCE_FILE_FIELD) {
      form.strayFiles.push(part.fieldname);
      await drain(part.file, form);
    } else {
      const fileName = part.filename ?? '';
      try {
        const staged = await stageUpload(store, workspaceId, part.file, fileName);
        if (staged.ok) form.staged.push(staged.value);
        else form.refusal = { ...staged.error, fileName };
      } catch (error) {
        // The rest of the file is read and dropped, so the client hears the answer and can send
        // another request on the connection.
        await drain(part.file, form);
        if (!(error instanceof StorageFailure)) throw error;
        form.storageFailure = error;
      }
    }
    if (form.unreadable || form.storageFailure || form.refusal?.code === 'incomplete_upload') break;
  }
  if (form.unreadable || form.refusal || form.storageFailure) {
    for (const staged of form.staged) await discardStaged(store, staged);
    form.staged = [];
  }
  return form;
}

/** `control_ids` may be repeated and comma-separated; any other field is one value. */
export function evidenceFormFields(values: Map<string, unknown[]>): Record<string, unknown> {
  return Object.fromEntries(
    [...values].map(([name, list]) => {
      if (name !== 'control_ids') return [name, list.length === 1 ? list[0] : list];
      const ids = list.flatMap((value) => (typeof value === 'string' ? value.split(',') : [value]));
      return [name, ids.map((id) => (typeof id === 'string' ? id.trim() : id)).filter((id) => id !== '')];
    }),
  );
}

/** Reads a file part to its end, dropping its bytes. */
async function drain(file: Readable, form: ReceivedEvidenceForm): Promise<void> {
  await finished(file.resume()).catch((error: Error) => {
    form.unreadable = error;
  });
}

/** How long a client waits before trying a store that failed for now (a database or S3 restarting). */
const STORAGE_RETRY_AFTER_SECONDS = 30;

/**
 * A store that could not take an upload, logged once at error level for the operator and answered
 * as the service's failure (never the client's): 507 when full, 503 with Retry-After otherwise.
 */
export function storageFailureError(
  log: FastifyBaseLogger,
  failure: StorageFailure,
  backend: FileStoreKind,
  workspaceId: string,
): ServiceError {
  log.error(
    { event: 'evidence.storage_failed', failure: failure.kind, backend, workspaceId, err: failure.cause },
    'evidence file could not be stored',
  );
  return failure.kind === 'full'
    ? { code: 'insufficient_storage' }
    : { code: 'storage_unavailable', retryAfterSeconds: STORAGE_RETRY_AFTER_SECONDS };
}
