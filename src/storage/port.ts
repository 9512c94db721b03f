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
  /**
   * Streams `source` into a pending file; on failure, nothing of it is left and the error is
   * thrown, as a `StorageFailure` when the store is full or unavailable.
   */
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

/** `full`: no room left (a disk or quota); `unavailable`: a failure that may pass. */
export type StorageFailureKind = 'full' | 'unavailable';

/**
 * The store could not take a file for reasons of its own, not the upload's nor a bug's: it is
 * `full` (a full disk or quota, the database's disk; an operator must make room) or `unavailable`
 * (an I/O error, S3's 5xx or time-out, the database out of reach: trying again later may
 * succeed). Every other error a store throws is a fault, such as a wrong configuration.
 */
export class StorageFailure extends Error {
  readonly kind: StorageFailureKind;

  constructor(kind: StorageFailureKind, cause: unknown) {
    super(kind === 'full' ? 'the file store is full' : 'the file store is unavailable', { cause });
    this.name = 'StorageFailure';
    this.kind = kind;
  }
}

/** Bytes per database chunk (and the largest piece a download hands on at once from the database). */
export const CHUNK_BYTES = 256 * 1024;
