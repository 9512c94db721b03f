import type { Readable } from 'node:stream';
import { type Static, Type } from 'typebox';
import { type AuditSource, recordAuditEvent } from '../audit/index.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { enqueueJob } from '../jobs/index.ts';
import { type Clock, DAY_MS } from '../shared/clock.ts';
import { newId, newSecret, sha256Hex } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { CalendarDate, iso, isoOrNull, Nullable, RecordId, Timestamp } from '../shared/wire.ts';
import type { FileStore } from '../storage/index.ts';
import type { EvidencePackagesTable, PackageStatus } from './packages.table.ts';

/** How long a finished package can be downloaded; the sweep then removes its file. */
export const PACKAGE_TTL_MS = 3 * DAY_MS;
/** The longest range one package may cover: a certification cycle (three years). */
export const MAX_RANGE_DAYS = 3 * 366;
/** Packages a workspace may have waiting or building at once. */
const MAX_PACKAGES_IN_PROGRESS = 3;
/** The job that builds a package. */
export const BUILD_PACKAGE_JOB = 'evidence-package.build';
/** A download link's token: `epk_` + 256 random bits. */
const TOKEN_PREFIX = 'epk_';

const STATUSES = [
  'queued',
  'building',
  'ready',
  'failed',
  'expired',
] as const satisfies readonly PackageStatus[];

export const CreateEvidencePackageBody = Type.Object(
  {
    from: Type.Optional({
      ...CalendarDate,
      description: 'First day (UTC) of evidence to include; absent: from the first.',
    }),
    to: Type.Optional({ ...CalendarDate, description: 'Last day (UTC), inclusive; absent: up to now.' }),
  },
  { additionalProperties: false, examples: [{ from: '2026-01-01', to: '2026-03-31' }, {}] },
);
export type CreateEvidencePackageBody = Static<typeof CreateEvidencePackageBody>;

const PACKAGE_DESCRIPTION = 'A zip of the audit documents and the evidence of a date range, with a manifest.';

const PACKAGE_EXAMPLE = {
  id: 'epk_06f1k2m3n4p5q6r7s8t9v0w1x2',
  status: 'ready',
  from: '2026-01-01',
  to: '2026-03-31',
  requested_by: 'ada@example.com',
  progress: { files_done: 214, files_total: 214, bytes_done: 734_003_200, bytes_total: 734_003_200 },
  size: 734_052_118,
  sha256: '9087e76db8146193c3d99761026fb7cb5317e81fb91dfcc5f636407064546116',
  error: null,
  created_at: '2026-04-02T09:00:00.000Z',
  started_at: '2026-04-02T09:00:01.000Z',
  finished_at: '2026-04-02T09:01:30.000Z',
  expires_at: '2026-04-05T09:01:30.000Z',
  status_url: 'https://compliance.example.com/api/v1/evidence-packages/epk_06f1k2m3n4p5q6r7s8t9v0w1x2',
  file_url: 'https://compliance.example.com/api/v1/evidence-packages/epk_06f1k2m3n4p5q6r7s8t9v0w1x2/file',
};

export const EvidencePackage = Type.Object(
  {
    id: RecordId('epk'),
    status: Type.Enum(STATUSES, {
      description:
        '`queued`, then `building`, then `ready` (downloadable until `expires_at`), `failed`, or `expired` (its file removed).',
    }),
    from: Nullable(CalendarDate),
    to: Nullable(CalendarDate),
    requested_by: Type.String(),
    progress: Type.Object({
      files_done: Type.Integer({ minimum: 0 }),
      files_total: Type.Integer({ minimum: 0 }),
      bytes_done: Type.Integer({ minimum: 0 }),
      bytes_total: Type.Integer({ minimum: 0 }),
    }),
    size: Nullable(Type.Integer({ minimum: 0, description: 'The zip, in bytes, once ready.' })),
    sha256: Nullable(Type.String({ description: 'SHA-256 of the whole zip, once ready.' })),
    error: Nullable(Type.String()),
    created_at: Timestamp,
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    expires_at: Nullable(Timestamp),
    status_url: Type.String(),
    file_url: Nullable(Type.String({ description: 'GET it with the API key once `ready`.' })),
  },
  { description: PACKAGE_DESCRIPTION, examples: [PACKAGE_EXAMPLE] },
);
export type EvidencePackage = Static<typeof EvidencePackage>;

export const CreatedEvidencePackage = Type.Object(
  {
    ...EvidencePackage.properties,
    download_url: Type.String({
      description:
        'A link that downloads the zip without an API key once `ready`, until `expires_at`. Shown only in this answer.',
    }),
  },
  {
    description: PACKAGE_DESCRIPTION,
    examples: [
      {
        ...PACKAGE_EXAMPLE,
        status: 'queued',
        progress: { files_done: 0, files_total: 0, bytes_done: 0, bytes_total: 0 },
        size: null,
        sha256: null,
        started_at: null,
        finished_at: null,
        expires_at: null,
        file_url: null,
        download_url:
          'https://compliance.example.com/api/v1/evidence-package-downloads/epk_kT3v9QmZ1xYbW8rLp0sNdE4fGh6JcA2uV5yXoI7qR-M',
      },
    ],
  },
);
export type CreatedEvidencePackage = Static<typeof CreatedEvidencePackage>;

/** Where a surface serves a package: its status and its file. */
export interface PackageLinks {
  status(id: string): string;
  file(id: string): string;
}

export interface PackageDeps {
  db: Db;
  clock: Clock;
  store: FileStore;
}

export type PackageError =
  | { code: 'invalid_range'; detail: string }
  | { code: 'range_too_long'; maxDays: number }
  | { code: 'packages_in_progress'; limit: number };

type Row = EvidencePackagesTable;

export function toEvidencePackage(row: Row, links: PackageLinks): EvidencePackage {
  return {
    id: row.id,
    status: row.status,
    from: row.range_from,
    to: row.range_to,
    requested_by: row.requested_by,
    progress: {
      files_done: Number(row.files_done),
      files_total: Number(row.files_total),
      bytes_done: Number(row.bytes_done),
      bytes_total: Number(row.bytes_total),
    },
    size: row.size === null ? null : Number(row.size),
    sha256: row.sha256,
    error: row.error,
    created_at: iso(Number(row.created_at)),
    started_at: isoOrNull(row.started_at === null ? null : Number(row.started_at)),
    finished_at: isoOrNull(row.finished_at === null ? null : Number(row.finished_at)),
    expires_at: isoOrNull(row.expires_at === null ? null : Number(row.expires_at)),
    status_url: links.status(row.id),
    file_url: row.status === 'ready' ? links.file(row.id) : null,
  };
}

const dayStart = (date: string): number => Date.parse(`${date}T00:00:00.000Z`);

/** The range's epoch milliseconds, `[from, to)`, to filter evidence by when it was added. */
export function rangeOf(row: Pick<Row, 'range_from' | 'range_to'>): { from?: number; to?: number } {
  return {
    ...(row.range_from ? { from: dayStart(row.range_from) } : {}),
    ...(row.range_to ? { to: dayStart(row.range_to) + DAY_MS } : {}),
  };
}

/**
 * Checks a requested range: `from` after `to` (or after today when `to` is absent) is upside down;
 * longer than `MAX_RANGE_DAYS` from `from` to `to` (or today) is refused. Absent `from` means the
 * whole history, which is the whole-workspace package and always allowed.
 */
function checkRange(body: CreateEvidencePackageBody, now: Date): PackageError | undefined {
  const today = now.toISOString().slice(0, 10);
  if (body.from === undefined) return undefined;
  const end = body.to ?? today;
  if (body.from > end) {
    return {
      code: 'invalid_range',
      detail: body.to === undefined ? '`from` is after today.' : '`from` is after `to`.',
    };
  }
  const days = (dayStart(end) - dayStart(body.from)) / DAY_MS + 1;
  return days > MAX_RANGE_DAYS ? { code: 'range_too_long', maxDays: MAX_RANGE_DAYS } : undefined;
}

/**
 * Records a package request and queues its build, in one transaction with its audit event.
 * Answers the package and its download link's token, which only its SHA-256 is kept of.
 */
export async function requestPackage(
  deps: PackageDeps,
  workspaceId: string,
  body: CreateEvidencePackageBody,
  source: AuditSource,
): Promise<Result<{ row: Row; token: string }, PackageError>> {
  const now = deps.clock.now();
  const refusal = checkRange(body, now);
  if (refusal) return err(refusal);
  return inTransaction(deps.db, async (trx) => {
    const { waiting } = await trx
      .selectFrom('evidence_packages')
      .select((eb) => eb.fn.countAll<number>().as('waiting'))
      .where('workspace_id', '=', workspaceId)
      .where('status', 'in', ['queued', 'building'])
      .executeTakeFirstOrThrow();
    if (Number(waiting) >= MAX_PACKAGES_IN_PROGRESS) {
      return err({ code: 'packages_in_progress' as const, limit: MAX_PACKAGES_IN_PROGRESS });
    }
    const token = newSecret(TOKEN_PREFIX);
    const row: Row = {
      id: newId('epk', now),
      workspace_id: workspaceId,
      status: 'queued',
      range_from: body.from ?? null,
      range_to: body.to ?? null,
      requested_by: source.actor.label,
      download_token_hash: sha256Hex(token),
      build_id: null,
      storage_name: null,
      files_total: 0,
      files_done: 0,
      bytes_total: 0,
      bytes_done: 0,
      size: null,
      sha256: null,
      error: null,
      created_at: now.getTime(),
      started_at: null,
      finished_at: null,
      expires_at: null,
    };
    await trx.insertInto('evidence_packages').values(row).execute();
    await enqueueJob(trx, now, {
      kind: BUILD_PACKAGE_JOB,
      payload: { packageId: row.id },
      maxAttempts: 3,
      dedupeKey: `${BUILD_PACKAGE_JOB}:${row.id}`,
    });
    await recordAuditEvent(trx, {
      workspaceId,
      action: 'evidence_package.requested',
      actor: source.actor,
      target: { type: 'evidence_package', id: row.id, label: packageLabel(row) },
      ip: source.ip ?? null,
      userAgent: source.userAgent ?? null,
      at: now,
    });
    return ok({ row, token });
  });
}

/** How a package is named in the audit log and on its page. */
export function packageLabel(row: Pick<Row, 'range_from' | 'range_to'>): string {
  if (!row.range_from && !row.range_to) return 'Whole workspace';
  return `${row.range_from ?? 'the start'} to ${row.range_to ?? 'today'}`;
}

/** The zip's file name as downloaded. */
export function packageFileName(row: Pick<Row, 'range_from' | 'range_to' | 'created_at'>): string {
  const made = new Date(Number(row.created_at)).toISOString().slice(0, 10);
  if (!row.range_from && !row.range_to) return `evidence-package-${made}.zip`;
  return `evidence-package-${row.range_from ?? 'start'}-to-${row.range_to ?? made}.zip`;
}

export async function getPackage(db: Db, workspaceId: string, id: string): Promise<Row | undefined> {
  return db
    .selectFrom('evidence_packages')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The workspace's most recent packages, newest first. */
export async function listPackages(db: Db, workspaceId: string, limit = 20): Promise<Row[]> {
  return db
    .selectFrom('evidence_packages')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export type OpenedPackage =
  | { status: 'open'; row: Row; stream: Readable }
  | { status: 'not_ready'; row: Row }
  | { status: 'gone'; row: Row };

async function openRow(deps: PackageDeps, row: Row): Promise<OpenedPackage> {
  if (row.status === 'queued' || row.status === 'building') return { status: 'not_ready', row };
  const live = row.status === 'ready' && Number(row.expires_at) > deps.clock.now().getTime();
  if (!live || !row.storage_name) return { status: 'gone', row };
  const stream = await deps.store.open(row.storage_name);
  // The row says ready: a missing file is a fault, not an expiry.
  if (!stream) throw new Error(`evidence package ${row.id} has no stored file ${row.storage_name}`);
  return { status: 'open', row, stream };
}

/** A package of the workspace, opened for download when it is ready and not expired. */
export async function openPackage(
  deps: PackageDeps,
  workspaceId: string,
  id: string,
): Promise<OpenedPackage | undefined> {
  const row = await getPackage(deps.db, workspaceId, id);
  return row && openRow(deps, row);
}

/** The package a download link's token names; undefined for a token that names none. */
export async function openPackageByToken(
  deps: PackageDeps,
  token: string,
): Promise<OpenedPackage | undefined> {
  if (!token.startsWith(TOKEN_PREFIX) || token.length > 100) return undefined;
  const row = await deps.db
    .selectFrom('evidence_packages')
    .selectAll()
    .where('download_token_hash', '=', sha256Hex(token))
    .executeTakeFirst();
  return row && openRow(deps, row);
}

/** Records a download in the audit log. */
export async function recordDownload(db: Db, clock: Clock, row: Row, source: AuditSource): Promise<void> {
  await inTransaction(db, (trx) =>
    recordAuditEvent(trx, {
      workspaceId: row.workspace_id,
      action: 'evidence_package.downloaded',
      actor: source.actor,
      target: { type: 'evidence_package', id: row.id, label: packageLabel(row) },
      ip: source.ip ?? null,
      userAgent: source.userAgent ?? null,
      at: clock.now(),
    }),
  );
}

/** The sweep's bound per run; it runs again soon. */
const SWEEP_BATCH = 100;
/** A failed build's leftovers and expired files are removed; rows stay as the history of requests. */
export async function sweepPackages(deps: PackageDeps): Promise<{ expired: number }> {
  const now = deps.clock.now().getTime();
  const due = await deps.db
    .selectFrom('evidence_packages')
    .select(['id', 'status', 'storage_name'])
    .where((eb) =>
      eb.or([
        eb.and([eb('status', '=', 'ready'), eb('expires_at', '<=', now)]),
        eb.and([eb('status', '=', 'failed'), eb('storage_name', 'is not', null)]),
      ]),
    )
    .limit(SWEEP_BATCH)
    .execute();
  let expired = 0;
  for (const row of due) {
    if (row.storage_name) await deps.store.remove(row.storage_name);
    const result = await deps.db
      .updateTable('evidence_packages')
      .set({ status: row.status === 'ready' ? 'expired' : row.status, storage_name: null })
      .where('id', '=', row.id)
      .where('status', '=', row.status)
      .executeTakeFirst();
    if (row.status === 'ready' && Number(result.numUpdatedRows) > 0) expired++;
  }
  return { expired };
}
