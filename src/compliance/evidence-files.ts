import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { finished, Readable, Transform } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import { err, ok, type Result } from '../shared/result.ts';
import type { FileStore } from '../storage/index.ts';

/**
 * Binary formats accepted as evidence, by the type detected from their bytes: documents, images,
 * screen recordings and archives. Executables, disk images, legacy Office files (their container
 * is also the one of .msi installers) and macro-enabled Office files are refused.
 */
const BINARY_TYPES: ReadonlySet<string> = new Set([
  'application/pdf',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/tiff',
  'image/bmp',
  'image/heic',
  'image/heif',
  'image/avif',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  'application/vnd.openxmlformats-officedocument.presentationml.presentation',
  'application/vnd.oasis.opendocument.text',
  'application/vnd.oasis.opendocument.spreadsheet',
  'application/vnd.oasis.opendocument.presentation',
  'application/zip',
  'application/gzip',
  'application/x-tar',
  'video/mp4',
  'video/webm',
  'video/quicktime',
]);

/** Formats whose signature is itself text, so a file of them also passes as text. */
const TEXT_SIGNATURE_TYPES: ReadonlySet<string> = new Set([
  'application/pdf',
  'application/rtf',
  'application/xml',
]);

/** Text has no signature: the bytes prove it is text, the name's extension only picks which kind. */
const TEXT_TYPES_BY_EXTENSION: Readonly<Record<string, string>> = {
  '.csv': 'text/csv',
  '.tsv': 'text/tab-separated-values',
  '.json': 'application/json',
  '.md': 'text/markdown',
};

/** Every content type an upload may be stored with. */
export const ACCEPTED_FILE_TYPES: readonly string[] = [
  ...new Set([
    ...BINARY_TYPES,
    ...TEXT_SIGNATURE_TYPES,
    'text/plain',
    ...Object.values(TEXT_TYPES_BY_EXTENSION),
  ]),
];

/** Control characters that occur in text files: tab, line feed, form feed, carriage return. */
const TEXT_CONTROLS: ReadonlySet<number> = new Set([0x09, 0x0a, 0x0c, 0x0d]);

export type UploadRefusal =
  | { code: 'file_too_large' }
  | { code: 'empty_file' }
  | { code: 'unsupported_file_type'; detected: string | null }
  /** The upload's bytes failed before their end: the body was cut off or is not well-formed. */
  | { code: 'incomplete_upload' };

/** An upload written to the store as a pending file, not yet named by a record. */
export interface StagedFile {
  /** The server-chosen key of the stored file. */
  storageKey: string;
  /** Its name in the store. */
  storedName: string;
  /** The client's file name, cleaned up for display and downloads. */
  name: string;
  size: number;
  sha256: string;
  contentType: string;
}

/** Where a stored file lives in the store: `<workspace id>/<server-chosen key>`. */
export function storedFileName(workspaceId: string, storageKey: string): string {
  return `${workspaceId}/${storageKey}`;
}

/** The workspace a stored file's name says it belongs to. */
export function workspaceOfStoredFile(name: string): string {
  return name.slice(0, name.indexOf('/'));
}

/**
 * Streams an upload into the store as a pending file while hashing it and checking whether it is
 * UTF-8 text, then decides its type from the stored bytes. A refused upload leaves nothing
 * behind. When the upload itself fails (a body cut off mid-file or malformed) that is a refusal;
 * when storage fails, the error is thrown (a `StorageFailure` when the store is full or
 * unavailable) and the rest of the upload is left unread, for the caller to read or drop.
 */
export async function stageUpload(
  store: FileStore,
  workspaceId: string,
  source: Readable & { readonly truncated?: boolean },
  clientFileName: string,
): Promise<Result<StagedFile, UploadRefusal>> {
  const storageKey = randomBytes(16).toString('hex');
  const storedName = storedFileName(workspaceId, storageKey);
  const hash = createHash('sha256');
  const text = new TextCheck();
  let size = 0;
  // The side that failed first is the cause: an upload that broke off is the client's doing. A
  // store that fails (a full disk) stops reading the inspected copy, never the upload itself.
  let uploadFailed = false;
  const inspected = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      text.push(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  // The store sees an upload's error when it next reads; until then the event needs a listener.
  inspected.on('error', () => {});
  // An upload that errs or closes before its end (a body cut off) fails the copy too, even when
  // that happened before it was handed over, which no 'error' listener would hear.
  finished(source, (error) => {
    if (!error) return;
    uploadFailed = true;
    inspected.destroy(error);
  });
  source.pipe(inspected);
  try {
    await store.writePending(storedName, inspected);
  } catch (error) {
    if (uploadFailed) return err({ code: 'incomplete_upload' });
    source.unpipe(inspected);
    throw error;
  }
  const name = displayName(clientFileName);
  const refusal = source.truncated ? ({ code: 'file_too_large' } as const) : undefined;
  let type: { mime: string } | UploadRefusal;
  try {
    type =
      refusal ??
      (size === 0 ? { code: 'empty_file' as const } : await detectType(store, storedName, name, text.end()));
  } catch (error) {
    await store.remove(storedName);
    throw error;
  }
  if ('code' in type) {
    await store.remove(storedName);
    return err(type);
  }
  return ok({ storageKey, storedName, name, size, sha256: hash.digest('hex'), contentType: type.mime });
}

/** Removes a staged upload that will not be kept. */
export async function discardStaged(store: FileStore, staged: StagedFile): Promise<void> {
  await store.remove(staged.storedName);
}

/** The signature found in the first bytes of a stored file, read as far as the detection needs. */
async function detectedType(store: FileStore, storedName: string): Promise<string | undefined> {
  const stream = await store.open(storedName);
  if (!stream) throw new Error(`the staged file ${storedName} is missing`);
  try {
    const { fileTypeFromStream } = await import('file-type');
    return (await fileTypeFromStream(Readable.toWeb(stream) as ReadableStream<Uint8Array>))?.mime;
  } finally {
    stream.destroy();
  }
}

async function detectType(
  store: FileStore,
  storedName: string,
  name: string,
  isText: boolean,
): Promise<{ mime: string } | UploadRefusal> {
  const detected = await detectedType(store, storedName);
  if (isText) {
    if (detected && TEXT_SIGNATURE_TYPES.has(detected)) return { mime: detected };
    return { mime: TEXT_TYPES_BY_EXTENSION[path.extname(name).toLowerCase()] ?? 'text/plain' };
  }
  if (detected && BINARY_TYPES.has(detected)) return { mime: detected };
  return { code: 'unsupported_file_type', detected: detected ?? null };
}

/** Whether a stream of chunks is UTF-8 text without control characters other than layout ones. */
class TextCheck {
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });
  #isText = true;

  push(chunk: Buffer): void {
    if (!this.#isText) return;
    for (const byte of chunk) {
      if ((byte < 0x20 && !TEXT_CONTROLS.has(byte)) || byte === 0x7f) {
        this.#isText = false;
        return;
      }
    }
    this.#isText = this.#decodes(chunk);
  }

  end(): boolean {
    return this.#isText && this.#decodes();
  }

  #decodes(chunk?: Buffer): boolean {
    try {
      this.#decoder.decode(chunk, { stream: chunk !== undefined });
      return true;
    } catch {
      return false;
    }
  }
}

const MAX_NAME_LENGTH = 255;

/**
 * The client's file name as we show it: no directories, no control or bidirectional-override
 * characters (which can disguise an extension), at most 255 characters keeping the extension.
 */
export function displayName(raw: string): string {
  const cleaned = raw
    .normalize('NFC')
    .replace(/^.*[\\/]/, '')
    .replace(/[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu, '')
    .trim();
  const name = cleaned === '' || cleaned === '.' || cleaned === '..' ? 'file' : cleaned;
  const characters = [...name];
  if (characters.length <= MAX_NAME_LENGTH) return name;
  const extension = [...path.extname(name)].slice(0, 16);
  return characters.slice(0, MAX_NAME_LENGTH - extension.length).join('') + extension.join('');
}
