import { randomBytes } from 'node:crypto';
import { pipeline } from 'node:stream';
import { evidenceInventory, evidenceTotals } from '../compliance/index.ts';
import type { JobDefinition, JobLogger } from '../jobs/index.ts';
import { PACKAGE_TTL_MS, type PackageDeps, rangeOf } from './packages.ts';
import { type DocumentsProvider, measuring, writePackageZip } from './zip.ts';

/** The folder of the file store finished packages live in, beside the workspaces' evidence folders. */
export const PACKAGE_FOLDER = 'evidence-packages';
/** Progress is written at most this often, so a package of 10,000 small files is not 10,000 updates. */
const PROGRESS_EVERY_MS = 1000;
/** `evidence.csv` and `links.csv`, written after the evidence. */
const INDEX_FILES = 2;

export interface BuildDeps extends PackageDeps {
  documents: DocumentsProvider;
  log: JobLogger;
}

/** Whether a stored file is a package's (the evidence orphan sweep leaves those to `sweepPackages`). */
export function isPackageFile(name: string): boolean {
  return name.startsWith(`${PACKAGE_FOLDER}/`);
}

/**
 * Builds one package into the file store. The build claims the row with an id of its own; a second
 * build of the same package (a lease that ran out while the first still ran) takes the row over,
 * and whichever finishes without owning it removes its file. A retry first removes the file a
 * crashed build left.
 */
export async function buildPackage(
  deps: BuildDeps,
  packageId: string,
  renewLease: () => Promise<void> = async () => {},
): Promise<void> {
  const row = await deps.db
    .selectFrom('evidence_packages')
    .selectAll()
    .where('id', '=', packageId)
    .executeTakeFirst();
  if (!row || (row.status !== 'queued' && row.status !== 'building')) return;
  if (row.storage_name) await deps.store.remove(row.storage_name);
  const buildId = randomBytes(8).toString('hex');
  const storageName = `${PACKAGE_FOLDER}/${row.id}-${buildId}`;
  const range = rangeOf(row);
  const documents = await deps.documents(row.workspace_id);
  const totals = await evidenceTotals(deps.db, row.workspace_id, range);
  const claimed = await deps.db
    .updateTable('evidence_packages')
    .set({
      status: 'building',
      build_id: buildId,
      storage_name: storageName,
      started_at: deps.clock.now().getTime(),
      files_total: documents.length + totals.files + INDEX_FILES,
      files_done: 0,
      bytes_total: documents.reduce((sum, document) => sum + document.content.length, 0) + totals.bytes,
      bytes_done: 0,
    })
    .where('id', '=', row.id)
    .where('status', 'in', ['queued', 'building'])
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) === 0) return;

  const mine = () =>
    deps.db.updateTable('evidence_packages').where('id', '=', row.id).where('build_id', '=', buildId);
  let lastWrite = performance.now();
  const { output, manifest } = writePackageZip({
    workspaceId: row.workspace_id,
    range: { from: row.range_from, to: row.range_to },
    generatedAt: deps.clock.now(),
    documents,
    evidence: evidenceInventory(deps.db, row.workspace_id, range),
    openFile: (name) => deps.store.open(name),
    async onProgress(files, bytes) {
      if (performance.now() - lastWrite < PROGRESS_EVERY_MS) return;
      lastWrite = performance.now();
      await mine().set({ files_done: files, bytes_done: bytes }).execute();
      await renewLease();
    },
  });
  const zip = measuring();
  try {
    // An error of the zip (a file that broke off) reaches the store's write, which then keeps nothing.
    const body = pipeline(output, zip, () => {});
    const [written] = await Promise.all([manifest, deps.store.writePending(storageName, body)]);
    await deps.store.finalize(storageName);
    const now = deps.clock.now().getTime();
    const contentBytes = written.files.reduce((sum, file) => sum + file.size, 0);
    const finished = await mine()
      .set({
        status: 'ready',
        files_done: written.files.length,
        files_total: written.files.length,
        bytes_done: contentBytes,
        bytes_total: contentBytes,
        size: zip.size,
        sha256: zip.digest(),
        finished_at: now,
        expires_at: now + PACKAGE_TTL_MS,
      })
      .executeTakeFirst();
    if (Number(finished.numUpdatedRows) === 0) await deps.store.remove(storageName);
    else
      deps.log.info(
        { event: 'evidence_package.ready', packageId: row.id, size: zip.size },
        'evidence package ready',
      );
  } catch (error) {
    output.destroy();
    await deps.store.remove(storageName);
    throw error;
  }
}

/** The build job: retried by the runner; when it gives up, the package is marked failed. */
export function buildPackageJob(deps: BuildDeps): JobDefinition {
  return {
    run: (payload, context) =>
      buildPackage(deps, (payload as { packageId: string }).packageId, context.renewLease),
    async onParked(payload) {
      const { packageId } = payload as { packageId: string };
      const row = await deps.db
        .selectFrom('evidence_packages')
        .select('storage_name')
        .where('id', '=', packageId)
        .executeTakeFirst();
      if (row?.storage_name) await deps.store.remove(row.storage_name);
      await deps.db
        .updateTable('evidence_packages')
        .set({
          status: 'failed',
          storage_name: null,
          finished_at: deps.clock.now().getTime(),
          error: 'The package could not be built. Request a new one; if it fails again, contact support.',
        })
        .where('id', '=', packageId)
        .where('status', 'in', ['queued', 'building'])
        .execute();
    },
  };
}
