import type { Readable } from 'node:stream';

export type FileStoreKind = 'local' | 'database' | 's3';

/** A file as a listing shows it. */
export interface StoredObject {
  /** `<workspace id>/<server-chosen key>`. */
  name: string;
  /** Written, but the record that names it may not have committed. */
  pending: boolean;
  /** When it was written, in epoch milliseconds, as the backend tells it. */
  writtenAt: number;
}

/**
 * Where uploaded files live. A file is written `pending`, then made `final` once the record that
 * names it has committed; a pending file without a record is what a crash left behind, and the
 * orphan sweep removes it after a bound. Every method streams: no file is held in memory whole.
 */
export interface FileStore {
  readonly kind: FileStoreKind;
  /** Streams `source` into a pending file; on failure, nothing of it is left and the error is thrown. */
  writePending(name: string, source: Readable): Promise<void>;
  /** Makes a pending file final; a file already final stays so. */
  finalize(name: string): Promise<void>;
  /** The bytes of the file, final or still pending; undefined when there is none. */
  open(name: string): Promise<Readable | undefined>;
  /** The size of the final file, undefined when there is none (a migration skips what is there). */
  finalSize(name: string): Promise<number | undefined>;
  /** Removes the file, pending or final; one already gone counts as removed. */
  remove(name: string): Promise<void>;
  /** Every file, pending or final, in no particular order. */
  list(): AsyncIterable<StoredObject>;
  /** Lets go of connections (the S3 client's sockets). */
  close(): void;
}

/** Bytes per database chunk (and the largest piece a download hands on at once from the database). */
export const CHUNK_BYTES = 256 * 1024;
