import type { EvidenceStorageConfig } from '../config.ts';
import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import { createDatabaseStore } from './database.ts';
import { createLocalStore } from './local.ts';
import type { FileStore } from './port.ts';

export { createDatabaseStore } from './database.ts';
export { createLocalStore } from './local.ts';
export {
  CHUNK_BYTES,
  type FileStore,
  type FileStoreKind,
  StorageFailure,
  type StorageFailureKind,
  type StoredObject,
} from './port.ts';

/**
 * The backend EVIDENCE_STORAGE names; the database one uses the service's own database. The AWS
 * SDK is loaded only when S3 is chosen (tens of milliseconds of start-up that other backends skip).
 */
export async function createFileStore(
  config: EvidenceStorageConfig,
  db: Db,
  clock: Clock,
): Promise<FileStore> {
  switch (config.kind) {
    case 'local':
      return createLocalStore(config.root);
    case 'database':
      return createDatabaseStore(db, clock);
    case 's3':
      return (await import('./s3.ts')).createS3Store(config);
  }
}
