import { randomBytes } from 'node:crypto';
import { evidenceInventory, evidenceTotals } from '../compliance/index.ts';
import type { JobDefinition, JobLogger } from '../jobs/index.ts';
import { PACKAGE_TTL_MS, type PackageDeps, rangeOf } from './packages.ts';
import { type ClaimedBuild, type StreamPackage, streamPackage } from './stream.ts';
import { type PackageWorkerConfig, packageWorkers } from './worker.ts';
import type { DocumentsProvider } from './zip.ts';

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
 * Claims the row with an id of its own; a second build of the same package (a lease that ran out
 * while the first still ran) takes the row over. A retry first removes the file a crashed build left.
 */
async function claimBuild(deps: BuildDeps, packageId: string): Promise<ClaimedBuild | undefined> {
  const row = await deps.db
    .selectFrom('evidence_packages')
    .selectAll()
    .where('id', '=', packageId)
    .executeTakeFirst();
  if (!row || (row.status !== 'queued' && row.status !== 'building')) return undefined;
  if (row.storage_name) await deps.store.remove(row.storage_name);
  const buildId = randomBytes(8).toString('hex');
  const storageName = `${PACKAGE_FOLDER}/${row.id}-${buildId}`;
  const documents = await deps.documents(row.workspace_id);
  const totals = await evidenceTotals(deps.db, row.workspace_id, rangeOf(row));
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
  if (Number(claimed.numUpdatedRows) === 0) return undefined;
  return {
    packageId: row.id,
    workspaceId: row.workspace_id,
    buildId,
    storageName,
    range: { from: row.range_from, to: row.range_to },
    documents,
    generatedAt: deps.clock.now().getTime(),
  };
}

/**
 * Builds one package into the file store: claims it, has `stream` write the zip, and marks it
 * ready; a build that no longer owns the row when it finishes removes its file.
 */
export async function buildPackage(
  deps: BuildDeps,
  packageId: string,
  renewLease: () => Promise<void> = async () => {},
  stream: StreamPackage = (build, evidence, onProgress) =>
    streamPackage(deps.store, build, evidence, onProgress),
): Promise<void> {
  const build = await claimBuild(deps, packageId);
  if (!build) return;
  const mine = () =>
    deps.db
      .updateTable('evidence_packages')
      .where('id', '=', build.packageId)
      .where('build_id', '=', build.buildId);
  let lastWrite = performance.now();
  const range = rangeOf({ range_from: build.range.from, range_to: build.range.to });
  const evidence = evidenceInventory(deps.db, build.workspaceId, range);
  const written = await stream(build, evidence, async (files, bytes) => {
    if (performance.now() - lastWrite < PROGRESS_EVERY_MS) return;
    lastWrite = performance.now();
    await mine().set({ files_done: files, bytes_done: bytes }).execute();
    await renewLease();
  });
  const now = deps.clock.now().getTime();
  const finished = await mine()
    .set({
      status: 'ready',
      files_done: written.files,
      files_total: written.files,
      bytes_done: written.contentBytes,
      bytes_total: written.contentBytes,
      size: written.size,
      sha256: written.sha256,
      finished_at: now,
      expires_at: now + PACKAGE_TTL_MS,
    })
    .executeTakeFirst();
  if (Number(finished.numUpdatedRows) === 0) await deps.store.remove(build.storageName);
  else
    deps.log.info(
      { event: 'evidence_package.ready', packageId: build.packageId, size: written.size },
      'evidence package ready',
    );
}

/** The build job: retried by the runner; when it gives up, the package is marked failed. */
export function buildPackageJob(
  deps: BuildDeps,
  worker?: PackageWorkerConfig,
): JobDefinition & { stop(): Promise<void> } {
  const workers = worker ? packageWorkers(worker) : undefined;
  return {
    run: (payload, context) =>
      buildPackage(deps, (payload as { packageId: string }).packageId, context.renewLease, workers?.stream),
    /** Ends the builds in flight (their jobs fail and are retried): a shutdown does not wait out a package. */
    stop: async () => workers?.stop(),
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
