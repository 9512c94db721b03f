import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import { CREATION_ORDER, fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import { inTransaction } from '../db/transaction.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { CalendarDate, HttpUrl, IdInput, iso, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import type { VendorRiskLevel, VendorStatus, VendorsTable } from './compliance.table.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  containsText,
  deleteRecord,
  fieldChanges,
  findWorkspaceRow,
  lockWorkspaceRow,
  missingReference,
  notFound,
  recordChange,
} from './shared.ts';

const VENDOR_RISK_LEVELS = [
  'low',
  'medium',
  'high',
  'critical',
] as const satisfies readonly VendorRiskLevel[];
const VENDOR_STATUSES = [
  'prospective',
  'active',
  'under_review',
  'offboarded',
] as const satisfies readonly VendorStatus[];

const VendorRiskLevelSchema = Type.Enum(VENDOR_RISK_LEVELS, {
  description: 'The risk the vendor poses to the workspace; medium until assessed.',
});
const VendorStatusSchema = Type.Enum(VENDOR_STATUSES, {
  description: 'prospective (being evaluated), active (in use), under_review, or offboarded.',
});

export const Vendor = Type.Object(
  {
    id: RecordId('vnd'),
    name: Type.String(),
    website: Nullable(Type.String({ format: 'uri' })),
    description: Nullable(Type.String()),
    risk_level: VendorRiskLevelSchema,
    status: VendorStatusSchema,
    owner_id: Nullable(RecordId('per', 'The person who owns the relationship (see /people).')),
    next_review_date: Nullable(CalendarDate),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'A third party the workspace relies on (supplier, SaaS, contractor).',
    examples: [
      {
        id: 'vnd_06f1k2m3n4p5q6r7s8t9v0w1x2',
        name: 'Example Cloud Hosting',
        website: 'https://cloud.example.com',
        description: 'Production hosting.',
        risk_level: 'high',
        status: 'active',
        owner_id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2',
        next_review_date: '2027-06-30',
        created_at: '2026-11-23T10:15:00.000Z',
        updated_at: '2026-11-23T10:15:00.000Z',
      },
    ],
  },
);
export type Vendor = Static<typeof Vendor>;

const editable = {
  website: Type.Optional(Nullable(HttpUrl('The website of the vendor, http or https.'))),
  description: Type.Optional(Nullable(Text(10_000))),
  risk_level: Type.Optional(VendorRiskLevelSchema),
  status: Type.Optional(VendorStatusSchema),
  owner_id: Type.Optional(Nullable(IdInput('A person of the workspace, or null for no owner.'))),
  next_review_date: Type.Optional(Nullable(CalendarDate)),
};

export const CreateVendorBody = Type.Object(
  { name: Text(200, { minLength: 1 }), ...editable },
  {
    additionalProperties: false,
    examples: [
      {
        name: 'Example Cloud Hosting',
        website: 'https://cloud.example.com',
        description: 'Production hosting.',
        risk_level: 'high',
        next_review_date: '2027-06-30',
      },
    ],
  },
);
export type CreateVendorBody = Static<typeof CreateVendorBody>;

export const UpdateVendorBody = Type.Object(
  { name: Type.Optional(Text(200, { minLength: 1 })), ...editable },
  { additionalProperties: false, minProperties: 1, examples: [{ status: 'under_review' }] },
);
export type UpdateVendorBody = Static<typeof UpdateVendorBody>;

export const VendorsFilter = Type.Object({
  q: Type.Optional(Text(200, { description: 'Matches part of the name or website, case-insensitively.' })),
  status: Type.Optional(VendorStatusSchema),
  risk_level: Type.Optional(VendorRiskLevelSchema),
  owner_id: Type.Optional(IdInput('Only vendors owned by this person.')),
  review_due_before: Type.Optional(
    Type.String({
      format: 'date',
      description: 'Only vendors whose next review date is before this date, YYYY-MM-DD.',
    }),
  ),
});
export type VendorsFilter = Static<typeof VendorsFilter>;

function toVendor(row: VendorsTable): Vendor {
  return {
    id: row.id,
    name: row.name,
    website: row.website,
    description: row.description,
    risk_level: row.risk_level,
    status: row.status,
    owner_id: row.owner_id,
    next_review_date: row.next_review_date,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function listVendors(
  { db }: ComplianceDeps,
  workspaceId: string,
  filter: VendorsFilter,
  page: PageRequest,
): Promise<Page<Vendor>> {
  let query = db.selectFrom('vendors').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.risk_level) query = query.where('risk_level', '=', filter.risk_level);
  if (filter.owner_id) query = query.where('owner_id', '=', filter.owner_id);
  // Calendar dates as YYYY-MM-DD compare as text in date order; vendors without a date never match.
  if (filter.review_due_before) query = query.where('next_review_date', '<', filter.review_due_before);
  if (filter.q) query = query.where(containsText(['name', 'website'], filter.q));
  const { rows, next } = await fetchPage(query, CREATION_ORDER, page);
  return { items: rows.map(toVendor), next };
}

export async function getVendor(
  { db }: ComplianceDeps,
  workspaceId: string,
  id: string,
): Promise<Vendor | undefined> {
  const row = await findWorkspaceRow(db, 'vendors', workspaceId, id);
  return row ? toVendor(row) : undefined;
}

export async function createVendor(
  deps: ComplianceDeps,
  workspaceId: string,
  body: CreateVendorBody,
  source: AuditSource,
): Promise<Result<Vendor, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const missing = await missingReference(trx, workspaceId, [
      { field: 'owner_id', kind: 'person', id: body.owner_id },
    ]);
    if (missing) return err(missing);
    const now = deps.clock.now();
    const row: VendorsTable = {
      id: newId('vnd', now),
      workspace_id: workspaceId,
      name: body.name,
      website: body.website ?? null,
      description: body.description ?? null,
      risk_level: body.risk_level ?? 'medium',
      status: body.status ?? 'active',
      owner_id: body.owner_id ?? null,
      next_review_date: body.next_review_date ?? null,
      created_at: now.getTime(),
      updated_at: now.getTime(),
    };
    await trx.insertInto('vendors').values(row).execute();
    const vendor = toVendor(row);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'vendor.created',
      data: vendor,
      target: { type: 'vendor', id: vendor.id, label: vendor.name },
    });
    return ok(vendor);
  });
}

export async function updateVendor(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdateVendorBody,
  source: AuditSource,
): Promise<Result<Vendor, ComplianceError>> {
  return inTransaction(deps.db, async (trx) => {
    const existing = await lockWorkspaceRow(trx, 'vendors', workspaceId, id);
    if (!existing) return err(notFound);
    const missing = await missingReference(trx, workspaceId, [
      { field: 'owner_id', kind: 'person', id: body.owner_id },
    ]);
    if (missing) return err(missing);
    const changes = fieldChanges(existing, body);
    if (Object.keys(changes).length === 0) return ok(toVendor(existing));
    const row: VendorsTable = { ...existing, ...body, updated_at: deps.clock.now().getTime() };
    const { id: _id, workspace_id: _workspace, created_at: _created, ...columns } = row;
    await trx
      .updateTable('vendors')
      .set(columns)
      .where('workspace_id', '=', workspaceId)
      .where('id', '=', id)
      .execute();
    const vendor = toVendor(row);
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'vendor.updated',
      data: vendor,
      target: { type: 'vendor', id: vendor.id, label: vendor.name },
      changes,
    });
    return ok(vendor);
  });
}

export async function deleteVendor(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  source: AuditSource,
): Promise<Result<{ id: string }, ComplianceError>> {
  return deleteRecord(deps, source, 'vendors', workspaceId, id);
}
