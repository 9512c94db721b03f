import { constants } from 'node:os';
import { StorageFailure, type StorageFailureKind } from './port.ts';

/** What kind of storage failure an error of a backend is; undefined when it is none. */
export type FailureKindOf = (error: unknown) => StorageFailureKind | undefined;

/** Runs `work`; an error `kindOf` recognises is thrown as a StorageFailure, any other as it is. */
export async function withStorageFailures<T>(kindOf: FailureKindOf, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const kind = kindOf(error);
    throw kind ? new StorageFailure(kind, error) : error;
  }
}

function systemError(error: unknown): { code?: unknown; errno?: unknown } {
  return typeof error === 'object' && error !== null ? error : {};
}

/**
 * A file system that cannot take more, or fails for now: a disk or NFS volume in trouble
 * (`EIO`, `ESTALE`, `ETIMEDOUT`, remounted read-only after errors) or no file descriptors left.
 * A missing or forbidden directory is a configuration to fix, not a failure that passes.
 */
const FILE_SYSTEM_UNAVAILABLE: ReadonlySet<unknown> = new Set([
  'EIO',
  'EROFS',
  'ESTALE',
  'ETIMEDOUT',
  'EMFILE',
  'ENFILE',
]);

/** A connection that could not be made or broke off: the database or the bucket out of reach. */
const CONNECTION_FAILURES: ReadonlySet<unknown> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

export const fileSystemFailure: FailureKindOf = (error) => {
  const { code, errno } = systemError(error);
  // libuv has no name for EDQUOT (Node's code is `UNKNOWN`): it is known by its number.
  if (code === 'ENOSPC' || errno === -constants.errno.EDQUOT) return 'full';
  return FILE_SYSTEM_UNAVAILABLE.has(code) ? 'unavailable' : undefined;
};

export const connectionFailure: FailureKindOf = (error) =>
  CONNECTION_FAILURES.has(systemError(error).code) ? 'unavailable' : undefined;
