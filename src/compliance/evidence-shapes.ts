import { type Static, Type } from 'typebox';
import { HttpUrl, IdInput, iso, isoOrNull, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import type { FileStore } from '../storage/index.ts';
import type { WorkspaceLock } from '../webhooks/index.ts';
import type { EvidenceKind, EvidenceTable } from './compliance.table.ts';
import type { ComplianceDeps } from './shared.ts';

/** Evidence as the API reads and writes it, and the mapping of its rows to that shape. */

export const MAX_CONTROL_LINKS = 100;

const FILE_EXAMPLE = {
  name: 'access-review-2026-q4.pdf',
  size: 184_320,
  sha256: '5d53dac11633235fd008a598b826349ac7cbe0376d8cfe575ca16f3fe57485c7',
  content_type: 'application/pdf',
  download_url: 'https://compliance.example.com/api/v1/evidence/evd_06f1k2m3n4p5q6r7s8t9v0w1x2/file',
};

export const EvidenceFile = Type.Object(
  {
    name: Type.String({ description: 'The uploaded file name, cleaned up; used for downloads.' }),
    size: Type.Integer({ minimum: 1, description: 'In bytes.' }),
    sha256: Type.String({ description: 'SHA-256 of the bytes, lowercase hex.' }),
    content_type: Type.String({
      description: 'Detected from the bytes at upload, not taken from the client.',
    }),
    download_url: Type.String({ description: 'GET it with the API key for the bytes.' }),
  },
  { description: 'The stored file of file evidence.', examples: [FILE_EXAMPLE] },
);
export type EvidenceFile = Static<typeof EvidenceFile>;

export const Evidence = Type.Object(
  {
    id: RecordId('evd'),
    kind: Type.Enum(['link', 'file'] as const satisfies readonly EvidenceKind[]),
    title: Type.String(),
    url: Nullable(Type.String({ description: 'The link of link evidence; the service never fetches it.' })),
    file: Nullable(EvidenceFile),
    control_ids: Type.Array(RecordId('ctl'), { description: 'The controls it supports, in Annex A order.' }),
    retired_at: Nullable(
      Type.String({
        format: 'date-time',
        description:
          'When it was retired (kept with its file, left out of lists by default); null while current.',
      }),
    ),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'Evidence that controls are in place: a link or an uploaded file.',
    examples: [
      {
        id: 'evd_06f1k2m3n4p5q6r7s8t9v0w1x2',
        kind: 'file',
        title: 'Access review, Q4 2026',
        url: null,
        file: FILE_EXAMPLE,
        control_ids: ['ctl_06f1k2m3n4p5q6r7s8t9v0w1x2', 'ctl_06f1k2m3n4p5q6r7s8t9v0w1y8'],
        retired_at: null,
        created_at: '2026-11-23T10:15:00.000Z',
        updated_at: '2026-11-23T10:15:00.000Z',
      },
    ],
  },
);
export type Evidence = Static<typeof Evidence>;

const ControlIds = (description: string) =>
  Type.Array(IdInput('A control of the workspace.'), { maxItems: MAX_CONTROL_LINKS, description });

export const CreateEvidenceLinkBody = Type.Object(
  {
    url: HttpUrl('Where the evidence is (a document, a dashboard, a ticket); http or https.'),
    title: Text(200, { minLength: 1 }),
    control_ids: Type.Optional(ControlIds('The controls it supports; an id given twice counts once.')),
  },
  {
    additionalProperties: false,
    examples: [{ url: 'https://wiki.example.com/backup-restore-test-2026-q1', title: 'Restore test, Q1' }],
  },
);
export type CreateEvidenceLinkBody = Static<typeof CreateEvidenceLinkBody>;

/** The text fields of the upload form, gathered from its parts. */
export const EvidenceUploadFields = Type.Object(
  {
    title: Type.Optional(Text(200, { minLength: 1, description: 'Defaults to the file name.' })),
    control_ids: Type.Optional(
      ControlIds('The controls it supports: repeat the field, or separate ids with commas.'),
    ),
  },
  { additionalProperties: false },
);
export type EvidenceUploadFields = Static<typeof EvidenceUploadFields>;

export const EvidenceUploadForm = Type.Object(
  {
    file: Type.String({ format: 'binary', description: 'The file; exactly one.' }),
    ...EvidenceUploadFields.properties,
  },
  {
    additionalProperties: false,
    examples: [
      {
        file: '(the bytes of access-review-2026-q4.pdf)',
        title: 'Access review, Q4 2026',
        control_ids: ['ctl_06f1k2m3n4p5q6r7s8t9v0w1x2'],
      },
    ],
  },
);

export const UpdateEvidenceBody = Type.Object(
  {
    title: Type.Optional(Text(200, { minLength: 1 })),
    control_ids: Type.Optional(ControlIds('Replaces the linked controls; [] unlinks them all.')),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ control_ids: [] }] },
);
export type UpdateEvidenceBody = Static<typeof UpdateEvidenceBody>;

export const EvidenceFilter = Type.Object({
  since: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'Only evidence created at or after this RFC 3339 time.',
    }),
  ),
  control_id: Type.Optional(IdInput('Only evidence linked to this control.')),
  retired: Type.Optional(
    Type.Enum(['false', 'true', 'all'] as const, {
      description: 'false (the default): current evidence only; true: retired evidence only; all: both.',
    }),
  ),
});
export type EvidenceFilter = Static<typeof EvidenceFilter>;

/**
 * Where tests make an upload "crash": after its file is written (no record yet), and after its
 * record committed (the file still pending). Production passes none.
 */
export type EvidenceFailpointName = 'evidence_file_written' | 'evidence_row_committed';

export interface EvidenceFailpoints {
  hit(name: EvidenceFailpointName): Promise<void>;
}

/** Where evidence files live (EVIDENCE_STORAGE), and (in tests) where an upload "crashes". */
export interface EvidenceStorage {
  /** Files under names the server chose. */
  store: FileStore;
  failpoints?: EvidenceFailpoints;
}

/** Where the REST API serves the file of an evidence: its `download_url`. */
export function evidenceFileUrl(baseUrl: string, evidenceId: string): string {
  return `${baseUrl}/api/v1/evidence/${evidenceId}/file`;
}

export interface EvidenceDeps extends ComplianceDeps, EvidenceStorage {
  /** The workspace's lock, under which an upload counts against the plan's storage. */
  lockWorkspace: WorkspaceLock;
  /** Where the API serves the file of an evidence (its `download_url`). */
  downloadUrl: (evidenceId: string) => string;
  /** Hears of stored files that could not be removed; they are left behind, the change stands. */
  log: { error(details: object, message: string): void };
}

/** The file of file evidence; null for a link. */
export function fileOf(deps: Pick<EvidenceDeps, 'downloadUrl'>, row: EvidenceTable): EvidenceFile | null {
  if (row.kind !== 'file') return null;
  return {
    name: row.file_name ?? '',
    size: Number(row.file_size),
    sha256: row.file_sha256 ?? '',
    content_type: row.content_type ?? '',
    download_url: deps.downloadUrl(row.id),
  };
}

export function toEvidence(
  deps: Pick<EvidenceDeps, 'downloadUrl'>,
  row: EvidenceTable,
  controlIds: string[],
): Evidence {
  return {
    id: row.id,
    kind: row.kind,
    title: row.title,
    url: row.url,
    file: fileOf(deps, row),
    control_ids: controlIds,
    retired_at: isoOrNull(row.retired_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
