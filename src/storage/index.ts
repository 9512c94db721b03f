import type { EvidenceStorageConfig } from '../config.ts';
import type { Db } from '../db/schema.ts';
import type { Clock } from '../shared/clock.ts';
import { createDatabaseStore } from './database.ts';
import { createLocalStore } from './local.ts';
import type { FileStore } from './port.ts';
import { createS3Store } from './s3.ts';

export { createDatabaseStore } from './database.ts';
export { createLocalStore } from './local.ts';
export { CHUNK_BYTES, type FileStore, type FileStoreKind, type StoredObject } from './port.ts';
export { createS3Store } from './s3.ts';

/** The backend EVIDENCE_STORAGE names; the database one uses the service's own database. */
export function createFileStore(config: EvidenceStorageConfig, db: Db, clock: Clock): FileStore {
  switch (config.kind) {
    case 'local':
      return createLocalStore(config.root);
    case 'database':
      return createDatabaseStore(db, clock);
    case 's3':
      return createS3Store(config);
  }
}
