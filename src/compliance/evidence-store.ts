import { createHash } from 'node:crypto';
import type { Db } from '../db/schema.ts';
import { DAY_MS } from '../shared/clock.ts';
import type { FileStore, StoredObject } from '../storage/index.ts';
import { storedFileName, workspaceOfStoredFile } from './evidence-files.ts';

/** How long a pending file may wait for its record: far beyond the slowest upload of the largest file. */
export const PENDING_FILE_GRACE_MS = DAY_MS;

const BATCH = 500;

export interface SweepOutcome {
  /** Pending files whose record had committed (a crash came between the two): now final. */
  finalized: number;
  /** Pending files no record names, older than the bound: an upload that never committed. */
  removed: number;
  /**
   * Final files of our workspaces no record names: a deletion whose file removal failed, or a
   * file of a restored copy of this database that shares the store (it knows the workspaces, not
   * the newer evidence). Left alone: only pending files are ever removed by the sweep.
   */
  unnamed: number;
  /**
   * Files of workspaces this database does not have: another database's, sharing the store (one
   * DATA_DIR, bucket or prefix for two deployments, or for SQLite and PostgreSQL). Left alone.
   */
  foreign: number;
}

export interface SweepDeps {
  db: Db;
  store: FileStore;
  /** Those of the ids that are workspaces of this database (the workspace module answers). */
  knownWorkspaces: (ids: readonly string[]) => Promise<Set<string>>;
  /** Files other modules keep in the same store (finished evidence packages): not evidence, skipped. */
  othersFile?: (name: string) => boolean;
}

/** The names among `objects` that a file evidence record points to. */
async function namedByRecords(db: Db, objects: readonly StoredObject[]): Promise<Set<string>> {
  const keys = objects.map((object) => object.name.slice(object.name.indexOf('/') + 1));
  if (keys.length === 0) return new Set();
  const rows = await db
    .selectFrom('evidence')
    .select(['workspace_id', 'storage_key'])
    .where('storage_key', 'in', keys)
    .execute();
  return new Set(rows.map((row) => storedFileName(row.workspace_id, row.storage_key ?? '')));
}

/**
 * The orphan sweep: makes every pending file its record names final, and removes the pending
 * files no record names that were written before `pendingBefore` (an upload that never
 * committed). It never removes a final file, nor touches a file of a workspace this database does
 * not have: a store may be shared with another database or a restored copy of this one, whose
 * files this database cannot tell from its own leftovers. Run on every backend; running it twice,
 * or on two instances at once, is harmless.
 */
export async function sweepEvidenceFiles(deps: SweepDeps, pendingBefore: number): Promise<SweepOutcome> {
  const outcome: SweepOutcome = { finalized: 0, removed: 0, unnamed: 0, foreign: 0 };
  const settle = async (batch: StoredObject[]) => {
    const named = await namedByRecords(deps.db, batch);
    const unnamed = batch.filter((object) => !named.has(object.name));
    const ours = await deps.knownWorkspaces([...new Set(unnamed.map((o) => workspaceOfStoredFile(o.name)))]);
    for (const object of batch) {
      if (named.has(object.name)) {
        if (!object.pending) continue;
        await deps.store.finalize(object.name);
        outcome.finalized++;
      } else if (!ours.has(workspaceOfStoredFile(object.name))) {
        outcome.foreign++;
      } else if (!object.pending) {
        outcome.unnamed++;
      } else if (object.writtenAt < pendingBefore) {
        await deps.store.remove(object.name);
        outcome.removed++;
      }
    }
  };
  let batch: StoredObject[] = [];
  for await (const object of deps.store.list()) {
    if (deps.othersFile?.(object.name)) continue;
    batch.push(object);
    if (batch.length < BATCH) continue;
    await settle(batch);
    batch = [];
  }
  await settle(batch);
  return outcome;
}

interface RecordedFile {
  id: string;
  name: string;
  size: number;
  sha256: string;
}

/** Every stored file a file evidence record names, with its size and SHA-256, in id order. */
async function* recordedFiles(db: Db): AsyncIterable<RecordedFile> {
  let after = '';
  for (;;) {
    const rows = await db
      .selectFrom('evidence')
      .select(['id', 'workspace_id', 'storage_key', 'file_size', 'file_sha256'])
      .where('kind', '=', 'file')
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .execute();
    for (const row of rows) {
      if (row.storage_key) {
        yield {
          id: row.id,
          name: storedFileName(row.workspace_id, row.storage_key),
          size: Number(row.file_size),
          sha256: row.file_sha256 ?? '',
        };
      }
    }
    const last = rows.at(-1);
    if (!last || rows.length < BATCH) return;
    after = last.id;
  }
}

export interface CopyOutcome {
  copied: number;
  /** Already in the target with the recorded size (a copy that was interrupted, run again). */
  skipped: number;
  /** Evidence whose file the source does not have: its id, to investigate. */
  missing: string[];
}

/**
 * Copies the file of every file evidence record from one store to another, streamed, each as a
 * pending file made final once complete. Restartable: a file already final in the target with
 * the recorded size is skipped. Used to move between backends and to back up the files.
 */
export async function copyEvidenceFiles(db: Db, from: FileStore, to: FileStore): Promise<CopyOutcome> {
  const outcome: CopyOutcome = { copied: 0, skipped: 0, missing: [] };
  for await (const file of recordedFiles(db)) {
    if ((await to.finalSize(file.name)) === file.size) {
      outcome.skipped++;
      continue;
    }
    const source = await from.open(file.name);
    if (!source) {
      outcome.missing.push(file.id);
      continue;
    }
    await to.remove(file.name);
    await to.writePending(file.name, source);
    await to.finalize(file.name);
    outcome.copied++;
  }
  return outcome;
}

/** The ids of file evidence whose file the store does not have (after a restore, say). */
export async function evidenceWithoutFiles(db: Db, store: FileStore): Promise<string[]> {
  const missing: string[] = [];
  for await (const file of recordedFiles(db)) {
    const stream = await store.open(file.name);
    if (stream) stream.destroy();
    else missing.push(file.id);
  }
  return missing;
}

/** How many file evidence records there are (each names one stored file). */
export async function countEvidenceFiles(db: Db): Promise<number> {
  const { files } = await db
    .selectFrom('evidence')
    .select((eb) => eb.fn.countAll<number>().as('files'))
    .where('kind', '=', 'file')
    .where('storage_key', 'is not', null)
    .executeTakeFirstOrThrow();
  return Number(files);
}

export interface FileCheck {
  checked: number;
  /** Evidence whose file the store does not have. */
  missing: string[];
  /** Evidence whose file has other bytes than recorded (size or SHA-256). */
  mismatched: string[];
}

/** Reads every file evidence names back from the store and compares it with its record. */
export async function checkEvidenceFiles(db: Db, store: FileStore): Promise<FileCheck> {
  const outcome: FileCheck = { checked: 0, missing: [], mismatched: [] };
  for await (const file of recordedFiles(db)) {
    outcome.checked++;
    const stream = await store.open(file.name);
    if (!stream) {
      outcome.missing.push(file.id);
      continue;
    }
    const hash = createHash('sha256');
    let size = 0;
    for await (const piece of stream as AsyncIterable<Buffer>) {
      hash.update(piece);
      size += piece.length;
    }
    if (size !== file.size || hash.digest('hex') !== file.sha256) outcome.mismatched.push(file.id);
  }
  return outcome;
}
