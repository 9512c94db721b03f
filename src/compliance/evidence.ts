import type { Readable } from 'node:stream';
import type { AuditSource } from '../audit/index.ts';
import { checkEntitlement, type PlanLimitReached } from '../catalog/index.ts';
import { fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import type { Db, Tx } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { epochMsOf, isoOrNull } from '../shared/wire.ts';
import type { WorkspaceLock } from '../webhooks/index.ts';
import type { EvidenceKind, EvidenceTable } from './compliance.table.ts';
import { type StagedFile, storedFileName } from './evidence-files.ts';
import {
  type CreateEvidenceLinkBody,
  type Evidence,
  type EvidenceDeps,
  type EvidenceFile,
  type EvidenceFilter,
  type EvidenceUploadFields,
  fileOf,
  toEvidence,
  type UpdateEvidenceBody,
} from './evidence-shapes.ts';
import {
  type ComplianceError,
  changedKeys,
  containsText,
  fieldChanges,
  findWorkspaceRow,
  lockWorkspaceRow,
  missingReference,
  notFound,
  recordChange,
} from './shared.ts';

function targetOf(row: Pick<EvidenceTable, 'id' | 'title'>) {
  return { type: 'evidence', id: row.id, label: row.title };
}

/** Rows as the API shows them, each with its controls in id order (the order Annex A was seeded in). */
async function withControls(
  deps: Pick<EvidenceDeps, 'downloadUrl'>,
  db: Db,
  rows: EvidenceTable[],
): Promise<Evidence[]> {
  const links = new Map<string, string[]>(rows.map((row) => [row.id, []]));
  if (rows.length > 0) {
    const linked = await db
      .selectFrom('evidence_controls')
      .select(['evidence_id', 'control_id'])
      .where('workspace_id', '=', rows[0]?.workspace_id ?? '')
      .where('evidence_id', 'in', [...links.keys()])
      .orderBy('control_id')
      .execute();
    for (const link of linked) links.get(link.evidence_id)?.push(link.control_id);
  }
  return rows.map((row) => toEvidence(deps, row, links.get(row.id) ?? []));
}

/**
 * The API's filters, and the app's: a search of the title, link and file name, and the kind. The
 * app's filters are not part of the REST API's query.
 */
export type EvidenceListFilter = EvidenceFilter & { q?: string; kind?: EvidenceKind };

/**
 * Newest first; with `control_id`, from the links table's own newest-first index. Retired evidence
 * is left out unless `retired` asks for it.
 */
export async function listEvidence(
  deps: Pick<EvidenceDeps, 'db' | 'downloadUrl'>,
  workspaceId: string,
  filter: EvidenceListFilter,
  page: PageRequest,
): Promise<Page<Evidence>> {
  // Every creation time is after 0, so no `since` is the same bound as the beginning of time.
  const since = filter.since === undefined ? 0 : epochMsOf(filter.since);
  const retired = filter.retired ?? 'false';
  const { rows, next } = filter.control_id
    ? await fetchPage(
        deps.db
          .selectFrom('evidence_controls')
          .innerJoin('evidence', 'evidence.id', 'evidence_controls.evidence_id')
          .selectAll('evidence')
          .select('evidence_controls.evidence_id')
          .where('evidence_controls.control_id', '=', filter.control_id)
          .where('evidence_controls.workspace_id', '=', workspaceId)
          .where('evidence.workspace_id', '=', workspaceId)
          .where('evidence_controls.created_at', '>=', since)
          .$if(retired === 'false', (query) => query.where('evidence.retired_at', 'is', null))
          .$if(retired === 'true', (query) => query.where('evidence.retired_at', 'is not', null))
          .$if(filter.kind !== undefined, (query) => query.where('evidence.kind', '=', filter.kind ?? 'link'))
          .$if(filter.q !== undefined, (query) =>
            query.where(
              containsText(['evidence.title', 'evidence.url', 'evidence.file_name'], filter.q ?? ''),
            ),
          ),
        {
          direction: 'desc',
          columns: [
            { column: 'evidence_controls.created_at', type: 'bigint' },
            { column: 'evidence_controls.evidence_id', type: 'string' },
          ],
        },
        page,
      )
    : await fetchPage(
        deps.db
          .selectFrom('evidence')
          .selectAll()
          .where('workspace_id', '=', workspaceId)
          .where('created_at', '>=', since)
          .$if(retired === 'false', (query) => query.where('retired_at', 'is', null))
          .$if(retired === 'true', (query) => query.where('retired_at', 'is not', null))
          .$if(filter.kind !== undefined, (query) => query.where('kind', '=', filter.kind ?? 'link'))
          .$if(filter.q !== undefined, (query) =>
            query.where(containsText(['title', 'url', 'file_name'], filter.q ?? '')),
          ),
        {
          direction: 'desc',
          columns: [
            { column: 'created_at', type: 'bigint' },
            { column: 'id', type: 'string' },
          ],
        },
        page,
      );
  return { items: await withControls(deps, deps.db, rows), next };
}

export async function getEvidence(
  deps: EvidenceDeps,
  workspaceId: string,
  id: string,
): Promise<Evidence | undefined> {
  const row = await findWorkspaceRow(deps.db, 'evidence', workspaceId, id);
  return row ? (await withControls(deps, deps.db, [row]))[0] : undefined;
}

/** The distinct control ids a body names, or the first one that is not a control of the workspace. */
async function knownControls(
  db: Db,
  workspaceId: string,
  controlIds: readonly string[] = [],
): Promise<Result<string[], ComplianceError>> {
  const references = controlIds.map((id, index) => ({
    field: `control_ids/${index}`,
    kind: 'control' as const,
    id,
  }));
  const missing = await missingReference(db, workspaceId, references);
  return missing ? err(missing) : ok([...new Set(controlIds)].sort());
}

async function insertLinks(trx: Tx, row: EvidenceTable, controlIds: readonly string[]): Promise<void> {
  if (controlIds.length === 0) return;
  await trx
    .insertInto('evidence_controls')
    .values(
      controlIds.map((control_id) => ({
        evidence_id: row.id,
        control_id,
        workspace_id: row.workspace_id,
        created_at: row.created_at,
      })),
    )
    .execute();
}

type EvidenceContent = Pick<
  EvidenceTable,
  'kind' | 'title' | 'url' | 'file_name' | 'file_size' | 'file_sha256' | 'content_type' | 'storage_key'
>;

const NO_FILE = {
  file_name: null,
  file_size: null,
  file_sha256: null,
  content_type: null,
  storage_key: null,
};

/**
 * Whether `adding` more bytes fit in the plan's evidence storage. The plan is read under the
 * workspace's lock, held until the transaction ends: two uploads at once add up one after the
 * other.
 */
async function storageRefusal(
  trx: Tx,
  lockWorkspace: WorkspaceLock,
  workspaceId: string,
  adding: number,
): Promise<PlanLimitReached | undefined> {
  const workspace = await lockWorkspace(trx, workspaceId);
  if (!workspace) return undefined;
  const stored = await evidenceBytesStored(trx, workspaceId);
  return checkEntitlement(workspace.plan, 'evidence_storage_bytes', stored, adding);
}

/** The bytes of the workspace's evidence files, retired ones included: what its plan's storage holds. */
export async function evidenceBytesStored(db: Db, workspaceId: string): Promise<number> {
  const { stored } = await db
    .selectFrom('evidence')
    .select((eb) => eb.fn.sum<number | string | null>('file_size').as('stored'))
    .where('workspace_id', '=', workspaceId)
    .executeTakeFirstOrThrow();
  return Number(stored ?? 0);
}

async function insertEvidence(
  deps: EvidenceDeps,
  workspaceId: string,
  content: EvidenceContent,
  controlIds: readonly string[] | undefined,
  source: AuditSource,
): Promise<Result<Evidence, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    if (content.file_size !== null) {
      const refusal = await storageRefusal(trx, deps.lockWorkspace, workspaceId, content.file_size);
      if (refusal) return err(refusal);
    }
    const controls = await knownControls(trx, workspaceId, controlIds);
    if (!controls.ok) return controls;
    const now = deps.clock.now();
    const row: EvidenceTable = {
      id: newId('evd', now),
      workspace_id: workspaceId,
      ...content,
      retired_at: null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    };
    await trx.insertInto('evidence').values(row).execute();
    await insertLinks(trx, row, controls.value);
    const evidence = toEvidence(deps, row, controls.value);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'evidence.created',
      data: evidence,
      target: targetOf(row),
    });
    return ok(evidence);
  });
}

export async function createLinkEvidence(
  deps: EvidenceDeps,
  workspaceId: string,
  body: CreateEvidenceLinkBody,
  source: AuditSource,
): Promise<Result<Evidence, ComplianceError>> {
  const content: EvidenceContent = { kind: 'link', title: body.title, url: body.url, ...NO_FILE };
  return insertEvidence(deps, workspaceId, content, body.control_ids, source);
}

/**
 * Keeps a staged upload as file evidence: the pending file is written, then the record commits,
 * then the file is made final. A crash before the commit leaves a pending file with no record,
 * which the orphan sweep removes; a crash after it leaves a pending file with its record, which
 * downloads read as it is and the sweep makes final. When no record is written (an unknown
 * control, a database failure) the file is removed at once.
 */
export async function createFileEvidence(
  deps: EvidenceDeps,
  workspaceId: string,
  fields: EvidenceUploadFields,
  staged: StagedFile,
  source: AuditSource,
): Promise<Result<Evidence, ComplianceError>> {
  await deps.failpoints?.hit('evidence_file_written');
  const content: EvidenceContent = {
    kind: 'file',
    title: fields.title ?? staged.name,
    url: null,
    file_name: staged.name,
    file_size: staged.size,
    file_sha256: staged.sha256,
    content_type: staged.contentType,
    storage_key: staged.storageKey,
  };
  let created: Result<Evidence, ComplianceError> | undefined;
  try {
    created = await insertEvidence(deps, workspaceId, content, fields.control_ids, source);
  } finally {
    if (!created?.ok) await removeFile(deps, staged.storedName);
  }
  if (!created.ok) return created;
  await deps.failpoints?.hit('evidence_row_committed');
  try {
    await deps.store.finalize(staged.storedName);
  } catch (error) {
    deps.log.error(
      { err: error, file: staged.storedName },
      'evidence file left pending; the sweep finalizes it',
    );
  }
  return created;
}

/** Title and linked controls; a PATCH that changes nothing keeps `updated_at` and publishes nothing. */
export async function updateEvidence(
  deps: EvidenceDeps,
  workspaceId: string,
  id: string,
  body: UpdateEvidenceBody,
  source: AuditSource,
): Promise<Result<Evidence, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, 'evidence', workspaceId, id);
    if (!existing) return err(notFound);
    const controls = await knownControls(trx, workspaceId, body.control_ids);
    if (!controls.ok) return controls;
    const current = (await withControls(deps, trx, [existing]))[0] as Evidence;
    const relink = body.control_ids !== undefined && controls.value.join() !== current.control_ids.join();
    if (changedKeys(existing, { title: body.title }).length === 0 && !relink) return ok(current);
    const row: EvidenceTable = {
      ...existing,
      title: body.title ?? existing.title,
      updated_at: deps.clock.now().getTime(),
    };
    await trx
      .updateTable('evidence')
      .set({ title: row.title, updated_at: row.updated_at })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    if (relink) {
      await trx
        .deleteFrom('evidence_controls')
        .where('workspace_id', '=', workspaceId)
        .where('evidence_id', '=', id)
        .execute();
      await insertLinks(trx, row, controls.value);
    }
    const evidence = toEvidence(deps, row, relink ? controls.value : current.control_ids);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'evidence.updated',
      data: evidence,
      target: targetOf(row),
      changes: {
        ...fieldChanges(existing, { title: body.title }),
        ...(relink ? { control_ids: { from: current.control_ids, to: controls.value } } : {}),
      },
    });
    return ok(evidence);
  });
}

/**
 * Retires evidence (it no longer shows that a control is in place, yet the auditor may ask what
 * was shown before) or restores it: the record and its file stay either way. Retiring retired
 * evidence, or restoring current evidence, changes nothing and publishes nothing.
 */
export async function setEvidenceRetired(
  deps: EvidenceDeps,
  workspaceId: string,
  id: string,
  retired: boolean,
  source: AuditSource,
): Promise<Result<Evidence, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, 'evidence', workspaceId, id);
    if (!existing) return err(notFound);
    const current = (await withControls(deps, trx, [existing]))[0] as Evidence;
    if ((existing.retired_at !== null) === retired) return ok(current);
    const now = deps.clock.now().getTime();
    const row: EvidenceTable = { ...existing, retired_at: retired ? now : null, updated_at: now };
    await trx
      .updateTable('evidence')
      .set({ retired_at: row.retired_at, updated_at: row.updated_at })
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    const evidence = toEvidence(deps, row, current.control_ids);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: retired ? 'evidence.retired' : 'evidence.restored',
      data: evidence,
      target: targetOf(row),
      changes: { retired_at: { from: isoOrNull(existing.retired_at), to: evidence.retired_at } },
    });
    return ok(evidence);
  });
}

/** Deletes the record (and its links) with its event, then its file once the deletion committed. */
export async function deleteEvidence(
  deps: EvidenceDeps,
  workspaceId: string,
  id: string,
  source: AuditSource,
): Promise<Result<{ id: string }, ComplianceError>> {
  const deleted = await inTransaction(deps.db, async (trx) => {
    const row = await trx
      .deleteFrom('evidence')
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .returning(['storage_key', 'title'])
      .executeTakeFirst();
    if (row) {
      await recordChange(trx, deps, source, {
        workspaceId,
        type: 'evidence.deleted',
        data: { id },
        target: targetOf({ id, title: row.title }),
      });
    }
    return row;
  });
  if (!deleted) return err(notFound);
  if (deleted.storage_key) await removeFile(deps, storedFileName(workspaceId, deleted.storage_key));
  return ok({ id });
}

/** The stored file of file evidence, opened for reading; undefined for link evidence or an unknown id. */
export async function openEvidenceFile(
  deps: EvidenceDeps,
  workspaceId: string,
  id: string,
): Promise<{ file: EvidenceFile; stream: Readable } | undefined> {
  const row = await findWorkspaceRow(deps.db, 'evidence', workspaceId, id);
  const file = row && fileOf(deps, row);
  if (!row?.storage_key || !file) return undefined;
  const name = storedFileName(workspaceId, row.storage_key);
  const stream = await deps.store.open(name);
  // The record says the file exists: its absence is a fault, not a 404.
  if (!stream) throw new Error(`evidence ${id} has no stored file ${name}`);
  return { file, stream };
}

/**
 * A file that cannot be removed is logged and left behind: the change it belonged to stands. The
 * hourly sweep counts such files (`unnamed`) but never removes a final file; remove it by hand.
 */
async function removeFile(deps: EvidenceDeps, name: string): Promise<void> {
  try {
    await deps.store.remove(name);
  } catch (error) {
    deps.log.error({ err: error, file: name }, 'evidence file could not be removed');
  }
}
