import { createHash } from 'node:crypto';
import { type Static, Type } from 'typebox';
import { type AuditSource, recordAuditEvent } from '../audit/index.ts';
import {
  type ApplicabilityRow,
  applicabilityRows,
  CONTROL_STATUSES,
  CONTROL_THEMES,
} from '../compliance/index.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { newId } from '../shared/ids.ts';
import { canonicalJson } from '../shared/jcs.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { iso, Nullable, RecordId, Timestamp } from '../shared/wire.ts';
import { getWorkspace } from '../workspace/index.ts';
import { type ReportTable, renderCsv, renderPdf, renderXlsx } from './documents.ts';
import type { SoaFileFormat, SoaVersionsTable } from './reports.table.ts';

export interface ReportsDeps {
  db: Db;
  clock: Clock;
}

export const SOA_FILE_FORMATS = ['csv', 'xlsx', 'pdf'] as const satisfies readonly SoaFileFormat[];
export const SoaFileFormatSchema = Type.Enum(SOA_FILE_FORMATS, { description: 'The file to download.' });

export const FILE_TYPES: Record<SoaFileFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pdf: 'application/pdf',
};

const STATUS_NAMES = {
  not_started: 'Not started',
  in_progress: 'In progress',
  implemented: 'Implemented',
  not_applicable: 'Not applicable',
} as const;
const THEME_NAMES = {
  organizational: 'Organizational',
  people: 'People',
  physical: 'Physical',
  technological: 'Technological',
} as const;

const CONTROL_EXAMPLE = {
  control_id: 'ctl_06f1k2m3n4p5q6r7s8t9v0w1x2',
  reference: 'A.7.1',
  title: 'Physical security perimeters',
  theme: 'physical',
  applicable: false,
  justification: 'No offices: all staff work remotely.',
  status: 'not_applicable',
  owner_id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2',
  owner_name: 'Grace Hopper',
  evidence_count: 1,
  latest_evidence_at: '2026-02-27T16:40:00.000Z',
} as const;

const CHANGE_EXAMPLE = {
  control_id: 'ctl_06f1k2m3n4p5q6r7s8t9v0w1x3',
  reference: 'A.5.2',
  title: 'Information security roles and responsibilities',
  changes: [{ field: 'status', from: 'in_progress', to: 'implemented' }],
} as const;

const GAP_EXAMPLE = {
  control_id: 'ctl_06f1k2m3n4p5q6r7s8t9v0w1x4',
  reference: 'A.7.4',
  title: 'Physical security monitoring',
  code: 'justification_missing',
  message: 'A.7.4 is excluded without a justification: say why it does not apply, or include it.',
} as const;

const VERSION_EXAMPLE = {
  number: 2,
  approved_at: '2026-03-02T09:30:00.000Z',
  approved_by: 'ada@example.com',
  sha256: '9f2c4e1b7a3d5f6e8c0b1a2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f',
  files: [
    { format: 'csv', sha256: '1d3f5a7c9e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f', size: 7013 },
    {
      format: 'xlsx',
      sha256: '2e4a6c8e0a2c4e6a8c0e2a4c6e8a0c2e4a6c8e0a2c4e6a8c0e2a4c6e8a0c2e4a',
      size: 12835,
    },
    {
      format: 'pdf',
      sha256: '3f5b7d9f1b3d5f7b9d1f3b5d7f9b1d3f5b7d9f1b3d5f7b9d1f3b5d7f9b1d3f5b',
      size: 41210,
    },
  ],
} as const;

export const SoaControl = Type.Object(
  {
    control_id: RecordId('ctl'),
    reference: Type.String({ examples: ['A.5.15'] }),
    title: Type.String(),
    theme: Type.Enum(CONTROL_THEMES),
    applicable: Type.Boolean({ description: 'False when the control is marked not_applicable (excluded).' }),
    justification: Nullable(Type.String({ description: 'Why the control is included or excluded.' })),
    status: Type.Enum(CONTROL_STATUSES, { description: 'The implementation status.' }),
    owner_id: Nullable(RecordId('per')),
    owner_name: Nullable(Type.String({ description: "The owner's name, or address when no name is known." })),
    evidence_count: Type.Integer({
      minimum: 0,
      description: 'Current (not retired) evidence linked to the control.',
    }),
    latest_evidence_at: Nullable(Timestamp),
  },
  {
    description: 'One Annex A control as the Statement of Applicability states it.',
    examples: [CONTROL_EXAMPLE],
  },
);
export type SoaControl = Static<typeof SoaControl>;

const SOA_FIELDS = [
  'title',
  'applicable',
  'justification',
  'status',
  'owner_name',
  'evidence_count',
  'latest_evidence_at',
] as const satisfies readonly (keyof SoaControl)[];
type SoaField = (typeof SOA_FIELDS)[number];

const ChangeValue = Nullable(Type.Union([Type.String(), Type.Integer(), Type.Boolean()]));

export const SoaChange = Type.Object(
  {
    control_id: RecordId('ctl'),
    reference: Type.String(),
    title: Type.String(),
    changes: Type.Array(Type.Object({ field: Type.Enum(SOA_FIELDS), from: ChangeValue, to: ChangeValue }), {
      description: 'Each field whose value differs, from the version to now.',
    }),
  },
  { description: 'A control whose row differs from the approved version.', examples: [CHANGE_EXAMPLE] },
);
export type SoaChange = Static<typeof SoaChange>;

export const SoaGap = Type.Object(
  {
    control_id: RecordId('ctl'),
    reference: Type.String(),
    title: Type.String(),
    code: Type.Literal('justification_missing'),
    message: Type.String(),
  },
  {
    description: 'Something to put right before the Statement of Applicability can be approved.',
    examples: [GAP_EXAMPLE],
  },
);
export type SoaGap = Static<typeof SoaGap>;

export const SoaVersionFile = Type.Object(
  {
    format: SoaFileFormatSchema,
    sha256: Type.String({ description: 'SHA-256 (hex) of the file as served.' }),
    size: Type.Integer({ minimum: 0, description: 'Bytes.' }),
  },
  { examples: [VERSION_EXAMPLE.files[0]] },
);

export const SoaVersionSummary = Type.Object(
  {
    number: Type.Integer({ minimum: 1 }),
    approved_at: Timestamp,
    approved_by: Type.String({
      description: 'Who approved: an account address or an API key, as the audit log names them.',
    }),
    sha256: Type.String({
      description:
        "SHA-256 (hex) of the version's content: the RFC 8785 canonical JSON of `{framework, workspace: {id, name}, version, approved_at, approved_by, controls}` as `GET /soa/versions/{number}` returns them.",
    }),
    files: Type.Array(SoaVersionFile, { description: 'The files frozen at approval.' }),
  },
  {
    description: 'An approved, numbered version of the Statement of Applicability; it never changes.',
    examples: [VERSION_EXAMPLE],
  },
);
export type SoaVersionSummary = Static<typeof SoaVersionSummary>;

export const SoaVersion = Type.Object(
  {
    ...SoaVersionSummary.properties,
    framework: Type.Literal('iso27001:2022'),
    workspace: Type.Object({ id: Type.String(), name: Type.String() }),
    controls: Type.Array(SoaControl),
  },
  {
    description: 'An approved version with the rows it froze.',
    examples: [
      {
        ...VERSION_EXAMPLE,
        framework: 'iso27001:2022',
        workspace: { id: 'ws_06f1k2m3n4p5q6r7s8t9v0w1x2', name: 'Acme Ltd' },
        controls: [CONTROL_EXAMPLE],
      },
    ],
  },
);
export type SoaVersion = Static<typeof SoaVersion>;

export const Soa = Type.Object(
  {
    framework: Type.Literal('iso27001:2022'),
    generated_at: Timestamp,
    state: Type.Enum(['never_approved', 'approved', 'changed_since_approval'], {
      description:
        'never_approved: no version yet; approved: the controls are as the latest version states them; changed_since_approval: they differ (see `changes`).',
    }),
    totals: Type.Object({
      controls: Type.Integer({ minimum: 0 }),
      applicable: Type.Integer({ minimum: 0 }),
      excluded: Type.Integer({ minimum: 0 }),
      implemented: Type.Integer({ minimum: 0 }),
    }),
    controls: Type.Array(SoaControl, { description: 'Every Annex A control, in the order of the standard.' }),
    gaps: Type.Array(SoaGap, {
      description: 'Excluded controls without a justification: approval waits for them.',
    }),
    latest_version: Nullable(SoaVersionSummary),
    changes: Type.Array(SoaChange, {
      description:
        'The controls that differ from the latest version, field by field; empty without a version.',
    }),
  },
  {
    description: 'The Statement of Applicability (ISO/IEC 27001 6.1.3 d), computed from the controls now.',
    examples: [
      {
        framework: 'iso27001:2022',
        generated_at: '2026-03-05T11:00:00.000Z',
        state: 'changed_since_approval',
        totals: { controls: 93, applicable: 92, excluded: 1, implemented: 30 },
        controls: [CONTROL_EXAMPLE],
        gaps: [GAP_EXAMPLE],
        latest_version: VERSION_EXAMPLE,
        changes: [CHANGE_EXAMPLE],
      },
    ],
  },
);
export type Soa = Static<typeof Soa>;

function toSoaControl(row: ApplicabilityRow): SoaControl {
  return {
    control_id: row.controlId,
    reference: row.reference,
    title: row.title,
    theme: row.theme,
    applicable: row.status !== 'not_applicable',
    justification: row.justification,
    status: row.status,
    owner_id: row.ownerId,
    owner_name: row.ownerName,
    evidence_count: row.evidenceCount,
    latest_evidence_at: row.latestEvidenceAt === null ? null : iso(row.latestEvidenceAt),
  };
}

function gapsOf(controls: SoaControl[]): SoaGap[] {
  return controls
    .filter((control) => !control.applicable && !control.justification?.trim())
    .map((control) => ({
      control_id: control.control_id,
      reference: control.reference,
      title: control.title,
      code: 'justification_missing',
      message: `${control.reference} is excluded without a justification: say why it does not apply, or include it.`,
    }));
}

/** The controls whose rows differ between a version and now, field by field. */
export function soaChanges(before: SoaControl[], now: SoaControl[]): SoaChange[] {
  const earlier = new Map(before.map((control) => [control.control_id, control]));
  return now.flatMap((control) => {
    const old = earlier.get(control.control_id);
    const changes = SOA_FIELDS.filter((field: SoaField) => old?.[field] !== control[field]).map((field) => ({
      field,
      from: old ? old[field] : null,
      to: control[field],
    }));
    return changes.length === 0
      ? []
      : [{ control_id: control.control_id, reference: control.reference, title: control.title, changes }];
  });
}

async function currentControls(deps: ReportsDeps, workspaceId: string): Promise<SoaControl[]> {
  return (await applicabilityRows(deps, workspaceId)).map(toSoaControl);
}

/** The Statement of Applicability as the controls stand now, with its gaps and changes since the latest version. */
export async function currentSoa(deps: ReportsDeps, workspaceId: string): Promise<Soa> {
  const controls = await currentControls(deps, workspaceId);
  const latest = await latestVersionRow(deps.db, workspaceId);
  const latestVersion = latest ? await summaryOf(deps.db, latest) : null;
  const changes = latest ? soaChanges(documentOf(latest).controls, controls) : [];
  return {
    framework: 'iso27001:2022',
    generated_at: deps.clock.now().toISOString(),
    state: !latest ? 'never_approved' : changes.length > 0 ? 'changed_since_approval' : 'approved',
    totals: {
      controls: controls.length,
      applicable: controls.filter((control) => control.applicable).length,
      excluded: controls.filter((control) => !control.applicable).length,
      implemented: controls.filter((control) => control.status === 'implemented').length,
    },
    controls,
    gaps: gapsOf(controls),
    latest_version: latestVersion,
    changes,
  };
}

/** The SoA's columns, one definition for the CSV, the workbook and the PDF. */
const SOA_COLUMNS = [
  { header: 'Reference', width: 10, pdfWeight: 7 },
  { header: 'Control', width: 40, pdfWeight: 16 },
  { header: 'Theme', width: 15, pdfWeight: 8 },
  { header: 'Applicable', width: 11, pdfWeight: 6 },
  { header: 'Justification', width: 60, pdfWeight: 23 },
  { header: 'Implementation status', width: 20, pdfWeight: 9 },
  { header: 'Owner', width: 24, pdfWeight: 11 },
  { header: 'Evidence', width: 10, pdfWeight: 6 },
  { header: 'Latest evidence', width: 16, pdfWeight: 8 },
];

function soaRowCells(control: SoaControl): (string | number | null)[] {
  return [
    control.reference,
    control.title,
    THEME_NAMES[control.theme],
    control.applicable ? 'Yes' : 'No',
    control.justification,
    STATUS_NAMES[control.status],
    control.owner_name,
    control.evidence_count,
    control.latest_evidence_at?.slice(0, 10) ?? null,
  ];
}

interface SoaDocument {
  framework: 'iso27001:2022';
  workspace: { id: string; name: string };
  version: number | null;
  approved_at: string | null;
  approved_by: string | null;
  controls: SoaControl[];
}

export function sha256Hex(content: string | Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}

function soaTable(document: SoaDocument, sha256: string, at: Date): ReportTable {
  const approval =
    document.version === null
      ? [
          { label: 'Version', value: 'Current, not approved' },
          { label: 'Generated', value: `${at.toISOString().slice(0, 16).replace('T', ' ')} UTC` },
        ]
      : [
          { label: 'Version', value: String(document.version) },
          {
            label: 'Approved',
            value: `by ${document.approved_by} on ${document.approved_at?.slice(0, 16).replace('T', ' ')} UTC`,
          },
        ];
  const applicable = document.controls.filter((control) => control.applicable).length;
  return {
    title: 'Statement of Applicability',
    cover: [
      { label: 'Workspace', value: document.workspace.name },
      { label: 'Standard', value: 'ISO/IEC 27001:2022, Annex A' },
      ...approval,
      {
        label: 'Controls',
        value: `${document.controls.length}: ${applicable} applicable, ${document.controls.length - applicable} excluded`,
      },
      { label: 'SHA-256 of the content', value: sha256 },
    ],
    columns: SOA_COLUMNS,
    rows: document.controls.map(soaRowCells),
    footer: `Statement of Applicability · ${document.workspace.name} · ${
      document.version === null ? 'current, not approved' : `version ${document.version}`
    }`,
    at,
  };
}

export interface ReportFile {
  path: string;
  content: Buffer;
}

/** One file of a report. */
export async function renderReport(table: ReportTable, format: SoaFileFormat): Promise<Buffer> {
  if (format === 'csv') return renderCsv(table);
  return format === 'xlsx' ? renderXlsx(table) : renderPdf(table);
}

/** The current SoA as a file; undefined when the workspace does not exist. */
export async function currentSoaFile(
  deps: ReportsDeps,
  workspaceId: string,
  format: SoaFileFormat,
): Promise<Buffer | undefined> {
  const table = await currentSoaTable(deps, workspaceId);
  return table && renderReport(table, format);
}

async function currentSoaTable(deps: ReportsDeps, workspaceId: string): Promise<ReportTable | undefined> {
  const workspace = await getWorkspace(deps.db, workspaceId);
  if (!workspace) return undefined;
  const document: SoaDocument = {
    framework: 'iso27001:2022',
    workspace: { id: workspace.id, name: workspace.name },
    version: null,
    approved_at: null,
    approved_by: null,
    controls: await currentControls(deps, workspaceId),
  };
  return soaTable(document, sha256Hex(canonicalJson(document)), deps.clock.now());
}

export type SoaApprovalError =
  | { code: 'not_found' }
  | { code: 'gaps'; gaps: SoaGap[] }
  /** The controls are as the latest version states them. */
  | { code: 'nothing_to_approve'; version: number }
  /** Another approval of the same workspace won the number. */
  | { code: 'conflict' };

/**
 * Approves the SoA as the controls stand now as the next numbered version: its content is frozen
 * as canonical JSON with its SHA-256, and its CSV, XLSX and PDF are rendered once and kept as
 * bytes. Refused while gaps remain, and when nothing changed since the latest version. Who may
 * approve is the caller's to check (the app: owners and admins; the API: any key of the workspace).
 */
export async function approveSoa(
  deps: ReportsDeps,
  workspaceId: string,
  source: AuditSource,
): Promise<Result<SoaVersionSummary, SoaApprovalError>> {
  const workspace = await getWorkspace(deps.db, workspaceId);
  if (!workspace) return err({ code: 'not_found' });
  const controls = await currentControls(deps, workspaceId);
  const gaps = gapsOf(controls);
  if (gaps.length > 0) return err({ code: 'gaps', gaps });
  const latest = await latestVersionRow(deps.db, workspaceId);
  if (latest && soaChanges(documentOf(latest).controls, controls).length === 0) {
    return err({ code: 'nothing_to_approve', version: latest.number });
  }
  const now = deps.clock.now();
  const document: SoaDocument = {
    framework: 'iso27001:2022',
    workspace: { id: workspace.id, name: workspace.name },
    version: (latest?.number ?? 0) + 1,
    approved_at: now.toISOString(),
    approved_by: source.actor.label,
    controls,
  };
  const text = canonicalJson(document);
  const row: SoaVersionsTable = {
    id: newId('soa', now),
    workspace_id: workspaceId,
    number: document.version ?? 1,
    approved_at: now.getTime(),
    approved_by: source.actor.label,
    sha256: sha256Hex(text),
    document: text,
  };
  const table = soaTable(document, row.sha256, now);
  const files = {
    csv: renderCsv(table),
    xlsx: await renderXlsx(table),
    pdf: await renderPdf(table),
  } satisfies Record<SoaFileFormat, Buffer>;
  return inTransaction(deps.db, async (trx) => {
    const inserted = await trx
      .insertInto('soa_versions')
      .values(row)
      .onConflict((conflict) => conflict.columns(['workspace_id', 'number']).doNothing())
      .executeTakeFirst();
    if ((inserted.numInsertedOrUpdatedRows ?? 0n) === 0n) return err({ code: 'conflict' });
    await trx
      .insertInto('soa_version_files')
      .values(
        SOA_FILE_FORMATS.map((format) => ({
          version_id: row.id,
          workspace_id: workspaceId,
          format,
          sha256: sha256Hex(files[format]),
          size: files[format].length,
          content: files[format],
        })),
      )
      .execute();
    await recordAuditEvent(trx, {
      workspaceId,
      actor: source.actor,
      action: 'soa.approved',
      target: { type: 'soa_version', id: row.id, label: `Statement of Applicability version ${row.number}` },
      ip: source.ip ?? null,
      userAgent: source.userAgent ?? null,
      at: now,
    });
    return ok({
      number: row.number,
      approved_at: iso(row.approved_at),
      approved_by: row.approved_by,
      sha256: row.sha256,
      files: SOA_FILE_FORMATS.map((format) => ({
        format,
        sha256: sha256Hex(files[format]),
        size: files[format].length,
      })),
    });
  });
}

function documentOf(row: SoaVersionsTable): SoaDocument {
  return JSON.parse(row.document) as SoaDocument;
}

async function latestVersionRow(db: Db, workspaceId: string): Promise<SoaVersionsTable | undefined> {
  return db
    .selectFrom('soa_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('number', 'desc')
    .limit(1)
    .executeTakeFirst();
}

async function summaryOf(db: Db, row: SoaVersionsTable): Promise<SoaVersionSummary> {
  return (await summariesOf(db, [row]))[0] as SoaVersionSummary;
}

async function summariesOf(db: Db, rows: SoaVersionsTable[]): Promise<SoaVersionSummary[]> {
  const files =
    rows.length === 0
      ? []
      : await db
          .selectFrom('soa_version_files')
          .select(['version_id', 'format', 'sha256', 'size'])
          .where(
            'version_id',
            'in',
            rows.map((row) => row.id),
          )
          .execute();
  return rows.map((row) => ({
    number: row.number,
    approved_at: iso(Number(row.approved_at)),
    approved_by: row.approved_by,
    sha256: row.sha256,
    files: SOA_FILE_FORMATS.flatMap((format) => {
      const file = files.find((candidate) => candidate.version_id === row.id && candidate.format === format);
      return file ? [{ format, sha256: file.sha256, size: Number(file.size) }] : [];
    }),
  }));
}

/** Every approved version of the workspace, newest first (a workspace approves a handful a year). */
export async function listSoaVersions(deps: ReportsDeps, workspaceId: string): Promise<SoaVersionSummary[]> {
  const rows = await deps.db
    .selectFrom('soa_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy('number', 'desc')
    .execute();
  return summariesOf(deps.db, rows);
}

export async function getSoaVersion(
  deps: ReportsDeps,
  workspaceId: string,
  number: number,
): Promise<SoaVersion | undefined> {
  const row = await deps.db
    .selectFrom('soa_versions')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('number', '=', number)
    .executeTakeFirst();
  if (!row) return undefined;
  const document = documentOf(row);
  return {
    ...(await summaryOf(deps.db, row)),
    framework: document.framework,
    workspace: document.workspace,
    controls: document.controls,
  };
}

/** A version's frozen file, exactly as stored at approval. */
export async function soaVersionFile(
  deps: ReportsDeps,
  workspaceId: string,
  number: number,
  format: SoaFileFormat,
): Promise<Buffer | undefined> {
  const file = await deps.db
    .selectFrom('soa_version_files')
    .innerJoin('soa_versions', 'soa_versions.id', 'soa_version_files.version_id')
    .select('soa_version_files.content')
    .where('soa_versions.workspace_id', '=', workspaceId)
    .where('soa_version_files.workspace_id', '=', workspaceId)
    .where('soa_versions.number', '=', number)
    .where('soa_version_files.format', '=', format)
    .executeTakeFirst();
  if (!file) return undefined;
  const bytes = file.content;
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The current SoA's files and every version's frozen ones, under the paths of an evidence package. */
export async function soaDocuments(deps: ReportsDeps, workspaceId: string): Promise<ReportFile[]> {
  const current = await currentSoaTable(deps, workspaceId);
  if (!current) return [];
  const files: ReportFile[] = [];
  for (const format of SOA_FILE_FORMATS) {
    files.push({
      path: `statement-of-applicability/current.${format}`,
      content: await renderReport(current, format),
    });
  }
  const versions = await listSoaVersions(deps, workspaceId);
  for (const version of versions.toReversed()) {
    for (const format of SOA_FILE_FORMATS) {
      const content = await soaVersionFile(deps, workspaceId, version.number, format);
      if (content) files.push({ path: `statement-of-applicability/v${version.number}.${format}`, content });
    }
  }
  return files;
}

/** A download's file name: `statement-of-applicability-v2.pdf`, `risk-treatment-plan-2026-03-02.csv`. */
export function reportFileName(
  report: 'statement-of-applicability' | 'risk-treatment-plan',
  format: SoaFileFormat,
  version: number | Date,
): string {
  const label = typeof version === 'number' ? `v${version}` : version.toISOString().slice(0, 10);
  return `${report}-${label}.${format}`;
}
