import type { Db } from '../db/schema.ts';
import type { EvidenceKind } from './compliance.table.ts';
import { storedFileName } from './evidence-files.ts';

const BATCH = 500;

/** Evidence added in `[from, to)` (epoch milliseconds; either end open when absent). */
export interface EvidenceRange {
  from?: number;
  to?: number;
}

/** One piece of evidence as a package lists it, with its controls in Annex A order. */
export interface InventoryEvidence {
  id: string;
  title: string;
  kind: EvidenceKind;
  url: string | null;
  /** The stored file of file evidence: its name for `FileStore.open`, and what its record says of it. */
  file: { name: string; storedName: string; size: number; sha256: string } | null;
  controls: { reference: string; title: string }[];
  createdAt: number;
}

/** How much a package of the range holds: evidence files and their recorded bytes, and links. */
export async function evidenceTotals(
  db: Db,
  workspaceId: string,
  range: EvidenceRange,
): Promise<{ files: number; bytes: number; links: number }> {
  const rows = await db
    .selectFrom('evidence')
    .select((eb) => [
      'kind',
      eb.fn.countAll<number>().as('count'),
      eb.fn.coalesce(eb.fn.sum<number>('file_size'), eb.lit(0)).as('bytes'),
    ])
    .where('workspace_id', '=', workspaceId)
    .where('retired_at', 'is', null)
    .$if(range.from !== undefined, (q) => q.where('created_at', '>=', range.from ?? 0))
    .$if(range.to !== undefined, (q) => q.where('created_at', '<', range.to ?? 0))
    .groupBy('kind')
    .execute();
  const totals = { files: 0, bytes: 0, links: 0 };
  for (const row of rows) {
    if (row.kind === 'file') {
      totals.files = Number(row.count);
      totals.bytes = Number(row.bytes);
    } else {
      totals.links = Number(row.count);
    }
  }
  return totals;
}

/**
 * The workspace's evidence added within the range, oldest first, retired evidence left out, read
 * a batch at a time from the `(workspace_id, created_at, id)` index: a package of 10,000 files
 * holds one batch in memory, not the list.
 */
export async function* evidenceInventory(
  db: Db,
  workspaceId: string,
  range: EvidenceRange,
): AsyncIterable<InventoryEvidence> {
  let after: { createdAt: number; id: string } | undefined;
  for (;;) {
    const position = after;
    const rows = await db
      .selectFrom('evidence')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('retired_at', 'is', null)
      .$if(range.from !== undefined, (q) => q.where('created_at', '>=', range.from ?? 0))
      .$if(range.to !== undefined, (q) => q.where('created_at', '<', range.to ?? 0))
      .$if(position !== undefined, (q) =>
        q.where((eb) =>
          eb.or([
            eb('created_at', '>', position?.createdAt ?? 0),
            eb.and([eb('created_at', '=', position?.createdAt ?? 0), eb('id', '>', position?.id ?? '')]),
          ]),
        ),
      )
      .orderBy('created_at')
      .orderBy('id')
      .limit(BATCH)
      .execute();
    const controls = new Map<string, { reference: string; title: string }[]>(rows.map((row) => [row.id, []]));
    if (rows.length > 0) {
      const linked = await db
        .selectFrom('evidence_controls')
        .innerJoin('controls', 'controls.id', 'evidence_controls.control_id')
        .select(['evidence_controls.evidence_id', 'controls.reference', 'controls.title'])
        .where('evidence_controls.workspace_id', '=', workspaceId)
        .where('evidence_controls.evidence_id', 'in', [...controls.keys()])
        .orderBy('controls.position')
        .execute();
      for (const link of linked) {
        controls.get(link.evidence_id)?.push({ reference: link.reference, title: link.title });
      }
    }
    for (const row of rows) {
      yield {
        id: row.id,
        title: row.title,
        kind: row.kind,
        url: row.url,
        file:
          row.kind === 'file' && row.storage_key
            ? {
                name: row.file_name ?? 'file',
                storedName: storedFileName(workspaceId, row.storage_key),
                size: Number(row.file_size),
                sha256: row.file_sha256 ?? '',
              }
            : null,
        controls: controls.get(row.id) ?? [],
        createdAt: Number(row.created_at),
      };
    }
    const last = rows.at(-1);
    if (!last || rows.length < BATCH) return;
    after = { createdAt: Number(last.created_at), id: last.id };
  }
}
