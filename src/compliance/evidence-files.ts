import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { type FileHandle, mkdir, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { err, ok, type Result } from '../shared/result.ts';

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

/** An upload received into a temporary file next to where it will be kept. */
export interface StagedFile {
  /** The server-chosen name of the stored file. */
  storageKey: string;
  stagingPath: string;
  finalPath: string;
  /** The client's file name, cleaned up for display and downloads. */
  name: string;
  size: number;
  sha256: string;
  contentType: string;
}

/** Where a stored file lives: `<root>/<workspace id>/<server-chosen name>`. */
export function storedFilePath(root: string, workspaceId: string, storageKey: string): string {
  return path.join(root, workspaceId, storageKey);
}

/**
 * Streams an upload to a temporary file while hashing it and checking whether it is UTF-8 text,
 * then decides its type from the bytes. A refused upload leaves nothing behind. When the upload
 * itself fails (a body cut off mid-file or malformed) that is a refusal; when storage fails, the
 * error is thrown.
 */
export async function stageUpload(
  root: string,
  workspaceId: string,
  source: Readable & { readonly truncated?: boolean },
  clientFileName: string,
): Promise<Result<StagedFile, UploadRefusal>> {
  const storageKey = randomBytes(16).toString('hex');
  const finalPath = storedFilePath(root, workspaceId, storageKey);
  const stagingPath = `${finalPath}.part`;
  await mkdir(path.dirname(finalPath), { recursive: true, mode: 0o700 });
  const hash = createHash('sha256');
  const text = new TextCheck();
  let size = 0;
  const sink = createWriteStream(stagingPath, { flags: 'wx', mode: 0o600 });
  // A failure on one side destroys the other with the same error: the side that failed first is
  // the cause. A small body is parsed at once, so its part may already have failed here.
  let failedFirst: 'upload' | 'storage' | undefined = source.destroyed ? 'upload' : undefined;
  source.once('error', () => {
    failedFirst ??= 'upload';
  });
  sink.once('error', () => {
    failedFirst ??= 'storage';
  });
  try {
    await pipeline(
      source,
      async function* inspect(chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          text.push(chunk);
          size += chunk.length;
          yield chunk;
        }
      },
      sink,
    );
    const name = displayName(clientFileName);
    const refusal = source.truncated ? ({ code: 'file_too_large' } as const) : undefined;
    const type =
      refusal ??
      (size === 0 ? { code: 'empty_file' as const } : await detectType(stagingPath, name, text.end()));
    if ('code' in type) {
      await rm(stagingPath, { force: true });
      return err(type);
    }
    return ok({
      storageKey,
      stagingPath,
      finalPath,
      name,
      size,
      sha256: hash.digest('hex'),
      contentType: type.mime,
    });
  } catch (error) {
    await rm(stagingPath, { force: true });
    if (failedFirst === 'upload') return err({ code: 'incomplete_upload' });
    throw error;
  }
}

/** Moves a staged upload into place; on failure the staged file is removed. */
export async function placeStaged(staged: StagedFile): Promise<void> {
  try {
    await rename(staged.stagingPath, staged.finalPath);
  } catch (error) {
    await discardStaged(staged);
    throw error;
  }
}

/** Removes a staged upload that will not be kept. */
export async function discardStaged(staged: StagedFile): Promise<void> {
  await rm(staged.stagingPath, { force: true });
}

/** Opens a stored file for reading; a missing file is a fault (its record says it exists). */
export function openStoredFile(filePath: string): Promise<FileHandle> {
  return open(filePath, 'r');
}

/** Removes a stored file; one already gone counts as removed. */
export async function removeStoredFile(filePath: string): Promise<void> {
  await rm(filePath, { force: true });
}

async function detectType(
  filePath: string,
  name: string,
  isText: boolean,
): Promise<{ mime: string } | UploadRefusal> {
  // Loaded with the first upload, not at start-up (docs/decisions.md).
  const { fileTypeFromFile } = await import('file-type');
  const detected = (await fileTypeFromFile(filePath))?.mime;
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
