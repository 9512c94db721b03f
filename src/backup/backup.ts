import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { copyEvidenceFiles, countEvidenceFiles } from '../compliance/index.ts';
import type { Config, S3StorageConfig } from '../config.ts';
import { BackupError, dumpDatabase, restoreDatabase } from '../db/backup.ts';
import { type DatabaseHandle, openDatabase } from '../db/database.ts';
import { latestAppliedMigration, migrations } from '../db/migrate.ts';
import { systemClock } from '../shared/clock.ts';
import {
  createDatabaseStore,
  createFileStore,
  createLocalStore,
  type FileStore,
  type FileStoreKind,
} from '../storage/index.ts';

const MANIFEST = 'manifest.json';
/** Where a backup keeps the files of the local evidence backend, as the backend lays them out. */
const EVIDENCE_FOLDER = 'evidence';

/** What a backup directory holds, written last: a directory without it is not a finished backup. */
export interface BackupManifest {
  createdAt: string;
  database: 'sqlite' | 'postgres';
  /** The newest migration in the backup; a build that does not know it is older than the data. */
  migration: string;
  evidenceBackend: FileStoreKind;
  /** File evidence records in the backup, each naming one file. */
  evidenceFiles: number;
  /** Whether the files are in the backup: in `evidence/` (local) or in the database dump (database). */
  evidenceFilesIncluded: boolean;
  /** Evidence whose file was gone when it was copied (deleted during the backup, or lost before). */
  missingEvidenceFiles: string[];
  /**
   * Where an `s3` deployment keeps the files (never its credentials): a restore onto another
   * backend copies them from there. Absent in backups taken before it was recorded.
   */
  s3?: S3Location;
}

/** An S3 store's place, as a backup records it. */
export type S3Location = Omit<S3StorageConfig, 'kind'>;

/**
 * Backs up the database, then the evidence files it names: a file is removed only after its record
 * is deleted, so copying after the database never finds fewer files than the copy names, except a
 * file whose evidence was deleted while the backup ran (listed in `missingEvidenceFiles`).
 */
export async function takeBackup(
  config: Config,
  database: DatabaseHandle,
  dir: string,
): Promise<BackupManifest> {
  await prepareEmptyDirectory(dir);
  const evidenceBackend = config.evidenceStorage.kind;
  const live = await createFileStore(config.evidenceStorage, database.db, systemClock);
  try {
    const manifest = await dumpDatabase(database, config.database, dir, async (snapshot) => {
      const migration = await latestAppliedMigration(snapshot);
      if (!migration)
        throw new BackupError('the database has no migrations applied: there is nothing to back up');
      const base = {
        createdAt: systemClock.now().toISOString(),
        database: config.database.kind,
        migration,
        evidenceBackend,
      };
      if (config.evidenceStorage.kind === 's3') {
        const { kind: _, ...s3 } = config.evidenceStorage;
        return {
          ...base,
          evidenceFiles: await countEvidenceFiles(snapshot),
          evidenceFilesIncluded: false,
          missingEvidenceFiles: [],
          s3,
        };
      }
      if (evidenceBackend === 'database') {
        return {
          ...base,
          evidenceFiles: await countEvidenceFiles(snapshot),
          evidenceFilesIncluded: true,
          missingEvidenceFiles: [],
        };
      }
      const copy = await copyEvidenceFiles(snapshot, live, createLocalStore(path.join(dir, EVIDENCE_FOLDER)));
      return {
        ...base,
        evidenceFiles: copy.copied + copy.skipped + copy.missing.length,
        evidenceFilesIncluded: true,
        missingEvidenceFiles: copy.missing,
      };
    });
    await writeFile(path.join(dir, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600 });
    return manifest;
  } finally {
    live.close();
  }
}

async function prepareEmptyDirectory(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if ((await readdir(dir)).length > 0)
    throw new BackupError(`${dir} is not empty; back up into a new directory`);
  // A directory made beforehand keeps its mode: close it before any file is written into it, since
  // the database copy is readable while it is written.
  await chmod(dir, 0o700);
}

async function readManifest(dir: string): Promise<BackupManifest> {
  let text: string;
  try {
    text = await readFile(path.join(dir, MANIFEST), 'utf8');
  } catch {
    throw new BackupError(`${path.join(dir, MANIFEST)} is missing: not a finished backup`);
  }
  let manifest: Partial<BackupManifest> | null;
  try {
    manifest = JSON.parse(text) as Partial<BackupManifest> | null;
  } catch {
    manifest = null;
  }
  if (
    !manifest ||
    (manifest.database !== 'sqlite' && manifest.database !== 'postgres') ||
    typeof manifest.migration !== 'string' ||
    typeof manifest.evidenceBackend !== 'string'
  ) {
    throw new BackupError(`${path.join(dir, MANIFEST)} is not a backup manifest`);
  }
  return manifest as BackupManifest;
}

export interface RestoreOutcome {
  manifest: BackupManifest;
  /** Evidence files copied into the configured store; undefined when none had to be. */
  copiedEvidenceFiles: number | undefined;
  /** Evidence the backup names whose file it does not have. */
  missingEvidenceFiles: string[];
}

/**
 * Restores a backup into an empty configured database, then copies its evidence files into the
 * configured store (a different backend than the backup's is fine: the files are copied across).
 * The files of an `s3` backup are read from the bucket it names, with the credentials of the
 * SDK's default chain; restored onto that same place, nothing is copied.
 */
export async function restoreBackup(config: Config, dir: string): Promise<RestoreOutcome> {
  const manifest = await readManifest(dir);
  if (manifest.database !== config.database.kind) {
    throw new BackupError(
      `the backup is of a ${manifest.database} database, but the configuration names ${config.database.kind} (DATABASE_URL)`,
    );
  }
  if (!(manifest.migration in migrations)) {
    throw new BackupError(
      `the backup is at migration ${manifest.migration}, which this version does not know; restore it with the version that took it or a newer one`,
    );
  }
  await restoreDatabase(config.database, dir);
  const database = openDatabase(config.database);
  const target = await createFileStore(config.evidenceStorage, database.db, systemClock);
  try {
    if (alreadyInPlace(manifest, config)) {
      return { manifest, copiedEvidenceFiles: undefined, missingEvidenceFiles: [] };
    }
    const source = await backupEvidenceStore(manifest, dir, database);
    if (!source) return { manifest, copiedEvidenceFiles: undefined, missingEvidenceFiles: [] };
    try {
      const copy = await copyEvidenceFiles(database.db, source, target);
      return { manifest, copiedEvidenceFiles: copy.copied, missingEvidenceFiles: copy.missing };
    } finally {
      source.close();
    }
  } finally {
    target.close();
    await database.close();
  }
}

/** Whether the configured store is where the backup's files already are: the database, or the same bucket and prefix. */
function alreadyInPlace(manifest: BackupManifest, config: Config): boolean {
  const target = config.evidenceStorage;
  if (manifest.evidenceBackend === 'database') return target.kind === 'database';
  if (manifest.evidenceBackend !== 's3' || !manifest.s3) return false;
  return (
    target.kind === 's3' &&
    target.bucket === manifest.s3.bucket &&
    target.prefix === manifest.s3.prefix &&
    target.endpoint === manifest.s3.endpoint
  );
}

/**
 * Where the backup's evidence files are: its folder, the restored database, or the bucket the
 * backup names; undefined for an `s3` backup taken before it named one.
 */
async function backupEvidenceStore(
  manifest: BackupManifest,
  dir: string,
  database: DatabaseHandle,
): Promise<FileStore | undefined> {
  switch (manifest.evidenceBackend) {
    case 'local':
      return createLocalStore(path.join(dir, EVIDENCE_FOLDER));
    case 'database':
      return createDatabaseStore(database.db, systemClock);
    case 's3':
      return manifest.s3
        ? createFileStore({ kind: 's3', ...manifest.s3 }, database.db, systemClock)
        : undefined;
  }
}
