import { createHash } from 'node:crypto';
import path from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { ZipFile } from 'yazl';
import type { InventoryEvidence } from '../compliance/index.ts';
import { csvLine } from '../shared/csv.ts';

/** A document the package carries as it is given (the SoA and treatment plan files). */
export interface PackageDocument {
  path: string;
  content: Buffer;
}

/** The audit documents of a workspace, by whoever produces them (the reports module). */
export type DocumentsProvider = (workspaceId: string) => Promise<PackageDocument[]>;

export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
  evidence_id?: string;
  /** Every control the evidence is linked to (the file lies in the first one's folder). */
  controls?: string[];
}

export interface Manifest {
  format: 'evidence-package/1';
  workspace_id: string;
  generated_at: string;
  range: { from: string | null; to: string | null };
  /** Every file of the zip but this manifest, in the order they were written. */
  files: ManifestFile[];
  /** File evidence whose stored file could not be found: left out. */
  missing_files: { evidence_id: string; title: string }[];
  /** File evidence whose bytes differ from the SHA-256 recorded at upload: packaged as they are now. */
  changed_since_upload: { evidence_id: string; path: string; recorded_sha256: string }[];
}

export interface PackageInput {
  workspaceId: string;
  range: { from: string | null; to: string | null };
  generatedAt: Date;
  documents: PackageDocument[];
  evidence: AsyncIterable<InventoryEvidence>;
  openFile(storedName: string): Promise<Readable | undefined>;
  /** After each file written: how many files and bytes of content so far. */
  onProgress?(files: number, bytes: number): void | Promise<void>;
}

const MANIFEST_PATH = 'manifest.json';
const EVIDENCE_INDEX_PATH = 'evidence.csv';
const LINKS_PATH = 'links.csv';
const UNLINKED_FOLDER = 'controls/Not linked to a control';
const SEGMENT_MAX = 120;
/** A stored entry above this size needs ZIP64 in its data descriptor. */
const ZIP32_MAX = 0xfffffffe;

/** A name that is one path segment on every system: no separators, reserved or control characters. */
function segment(name: string): string {
  const cleaned = name
    .replace(/[\\/:*?"<>|\p{Cc}]/gu, '_')
    .replace(/[. ]+$/, '')
    .trim();
  const characters = [...(cleaned === '' || cleaned === '..' ? '_' : cleaned)];
  if (characters.length <= SEGMENT_MAX) return characters.join('');
  const extension = [...path.extname(cleaned)].slice(0, 16);
  return characters.slice(0, SEGMENT_MAX - extension.length).join('') + extension.join('');
}

/** Paths handed out once each, regardless of case: a second `a.pdf` in a folder becomes `a (2).pdf`. */
class PathSet {
  readonly #taken = new Set<string>();

  claim(folder: string, name: string): string {
    const extension = path.extname(name);
    const stem = name.slice(0, name.length - extension.length);
    for (let n = 1; ; n++) {
      const candidate = `${folder}/${n === 1 ? name : `${stem} (${n})${extension}`}`;
      if (this.#taken.has(candidate.toLowerCase())) continue;
      this.#taken.add(candidate.toLowerCase());
      return candidate;
    }
  }

  reserve(fullPath: string): void {
    this.#taken.add(fullPath.toLowerCase());
  }
}

function folderOf(evidence: InventoryEvidence): string {
  const first = evidence.controls[0];
  return first ? `controls/${segment(`${first.reference} ${first.title}`)}` : UNLINKED_FOLDER;
}

/** Counts and hashes what passes through. */
export function measuring(): Transform & { size: number; digest(): string } {
  const hash = createHash('sha256');
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      measured.size += chunk.length;
      done(null, chunk);
    },
  });
  const measured = Object.assign(stream, { size: 0, digest: () => hash.digest('hex') });
  return measured;
}

const STORED = { compress: false } as const;

/**
 * Writes an evidence package as a zip, streamed: the documents, then every evidence file (one
 * open at a time, stored uncompressed: evidence is mostly already-compressed PDFs, images and
 * archives), `evidence.csv` and `links.csv`, and last `manifest.json` with every other file's
 * path, size and SHA-256, hashed as the bytes went by. Memory holds one file's buffers plus a
 * line per evidence for the index and the manifest, however large the files.
 *
 * Answers the zip's bytes to read (the caller pipes them to a store) and the manifest once the
 * last byte has been handed on.
 */
export function writePackageZip(input: PackageInput): { output: Readable; manifest: Promise<Manifest> } {
  const zip = new ZipFile();
  const manifest: Manifest = {
    format: 'evidence-package/1',
    workspace_id: input.workspaceId,
    generated_at: input.generatedAt.toISOString(),
    range: input.range,
    files: [],
    missing_files: [],
    changed_since_upload: [],
  };
  const mtime = input.generatedAt;
  const paths = new PathSet();
  let contentBytes = 0;
  /** The file being read, closed if the zip fails part-way. */
  let current: Readable | undefined;

  const addBuffer = (entryPath: string, content: Buffer, extra: Partial<ManifestFile> = {}) => {
    zip.addBuffer(content, entryPath, { ...STORED, mtime });
    manifest.files.push({
      path: entryPath,
      size: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      ...extra,
    });
    contentBytes += content.length;
  };

  /** Adds one stream and resolves once yazl has read it to its end. */
  const addStream = (entryPath: string, source: Readable, expectedSize: number) =>
    new Promise<{ size: number; sha256: string }>((resolve, reject) => {
      const measured = measuring();
      measured.on('end', () => resolve({ size: measured.size, sha256: measured.digest() }));
      measured.on('error', reject);
      source.on('error', (error) => measured.destroy(error));
      zip.addReadStreamLazy(
        entryPath,
        { ...STORED, mtime, forceZip64Format: expectedSize > ZIP32_MAX },
        (cb) => cb(null, source.pipe(measured)),
      );
    });

  const failed = new Promise<never>((_resolve, reject) => zip.on('error', reject));
  failed.catch(() => {});

  async function fill(): Promise<Manifest> {
    for (const document of input.documents) {
      const documentPath = document.path
        .split('/')
        .filter((part) => part !== '')
        .map(segment)
        .join('/');
      paths.reserve(documentPath);
      addBuffer(documentPath, document.content);
    }
    for (const reserved of [MANIFEST_PATH, EVIDENCE_INDEX_PATH, LINKS_PATH]) paths.reserve(reserved);
    const index = [
      csvLine(['evidence_id', 'title', 'kind', 'controls', 'added_at', 'path', 'url', 'sha256']),
    ];
    const links = [csvLine(['evidence_id', 'title', 'url', 'controls', 'added_at'])];
    let done = input.documents.length;
    for await (const evidence of input.evidence) {
      const controls = evidence.controls.map((control) => control.reference);
      const addedAt = new Date(evidence.createdAt).toISOString();
      if (!evidence.file) {
        links.push(csvLine([evidence.id, evidence.title, evidence.url, controls.join(' '), addedAt]));
        index.push(
          csvLine([
            evidence.id,
            evidence.title,
            'link',
            controls.join(' '),
            addedAt,
            null,
            evidence.url,
            null,
          ]),
        );
        continue;
      }
      const source = await input.openFile(evidence.file.storedName);
      current = source;
      if (!source) {
        manifest.missing_files.push({ evidence_id: evidence.id, title: evidence.title });
        continue;
      }
      const entryPath = paths.claim(folderOf(evidence), segment(evidence.file.name));
      const written = await Promise.race([addStream(entryPath, source, evidence.file.size), failed]);
      manifest.files.push({ path: entryPath, ...written, evidence_id: evidence.id, controls });
      if (written.sha256 !== evidence.file.sha256) {
        manifest.changed_since_upload.push({
          evidence_id: evidence.id,
          path: entryPath,
          recorded_sha256: evidence.file.sha256,
        });
      }
      index.push(
        csvLine([
          evidence.id,
          evidence.title,
          'file',
          controls.join(' '),
          addedAt,
          entryPath,
          null,
          written.sha256,
        ]),
      );
      contentBytes += written.size;
      await input.onProgress?.(++done, contentBytes);
    }
    addBuffer(EVIDENCE_INDEX_PATH, Buffer.from(index.join('')));
    addBuffer(LINKS_PATH, Buffer.from(links.join('')));
    zip.addBuffer(Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`), MANIFEST_PATH, { ...STORED, mtime });
    zip.end();
    return manifest;
  }

  const output = zip.outputStream as unknown as Readable;
  const filled = fill();
  const manifestWritten = Promise.race([filled, failed]).catch((error) => {
    current?.destroy();
    output.destroy(error);
    throw error;
  });
  return { output, manifest: manifestWritten };
}
