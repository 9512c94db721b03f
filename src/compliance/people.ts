import { type Static, Type } from 'typebox';
import { CREATION_ORDER, fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import type { Tx } from '../db/schema.ts';
import { inTransaction, isUniqueViolation, lockingRead } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { EmailAddress } from '../shared/email.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { iso, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import { publishEvent } from '../webhooks/index.ts';
import type { EmploymentStatus, PeopleTable } from './compliance.table.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  changedKeys,
  containsText,
  findWorkspaceRow,
  lockWorkspaceRow,
  notFound,
  type UpsertOutcome as Upserted,
  upsertByUniqueKey,
} from './shared.ts';

const EMPLOYMENT_STATUSES = [
  'current',
  'future',
  'former',
  'contractor',
] as const satisfies readonly EmploymentStatus[];
const EmploymentStatusSchema = Type.Enum(EMPLOYMENT_STATUSES, {
  description: 'current (employee), future (hired, not started), former, or contractor.',
});

const Email = EmailAddress({ description: 'Unique in the directory; compared case-insensitively.' });

export const Person = Type.Object(
  {
    id: RecordId('per'),
    email: Type.String(),
    name: Nullable(Type.String()),
    title: Nullable(Type.String({ description: 'Job title.' })),
    department: Nullable(Type.String()),
    employment_status: EmploymentStatusSchema,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    description: 'A person in the workspace directory.',
    examples: [
      {
        id: 'per_06f1k2m3n4p5q6r7s8t9v0w1x2',
        email: 'ada@example.com',
        name: 'Ada Lovelace',
        title: 'CTO',
        department: 'Engineering',
        employment_status: 'current',
        created_at: '2026-11-23T10:15:00.000Z',
        updated_at: '2026-11-23T10:15:00.000Z',
      },
    ],
  },
);
export type Person = Static<typeof Person>;

const editable = {
  name: Type.Optional(Nullable(Text(200))),
  title: Type.Optional(Nullable(Text(200))),
  department: Type.Optional(Nullable(Text(200))),
  employment_status: Type.Optional(EmploymentStatusSchema),
};

/** POST /people: created if the email is new, otherwise the person with that email is updated. */
export const UpsertPersonBody = Type.Object(
  { email: Email, ...editable },
  {
    additionalProperties: false,
    examples: [
      {
        email: 'ada@example.com',
        name: 'Ada Lovelace',
        title: 'CTO',
        department: 'Engineering',
        employment_status: 'current',
      },
    ],
  },
);
export type UpsertPersonBody = Static<typeof UpsertPersonBody>;

export const UpdatePersonBody = Type.Object(
  { email: Type.Optional(Email), ...editable },
  { additionalProperties: false, minProperties: 1, examples: [{ employment_status: 'former' }] },
);
export type UpdatePersonBody = Static<typeof UpdatePersonBody>;

export const PeopleFilter = Type.Object({
  q: Type.Optional(Text(200, { description: 'Matches part of the name or email, case-insensitively.' })),
  employment_status: Type.Optional(EmploymentStatusSchema),
});
export type PeopleFilter = Static<typeof PeopleFilter>;

export function toPerson(row: PeopleTable): Person {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    title: row.title,
    department: row.department,
    employment_status: row.employment_status,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function listPeople(
  { db }: ComplianceDeps,
  workspaceId: string,
  filter: PeopleFilter,
  page: PageRequest,
): Promise<Page<Person>> {
  let query = db.selectFrom('people').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.employment_status) query = query.where('employment_status', '=', filter.employment_status);
  if (filter.q) query = query.where(containsText(['name', 'email'], filter.q));
  const { rows, next } = await fetchPage(query, CREATION_ORDER, page);
  return { items: rows.map(toPerson), next };
}

export async function getPerson(
  { db }: ComplianceDeps,
  workspaceId: string,
  id: string,
): Promise<Person | undefined> {
  const row = await findWorkspaceRow(db, 'people', workspaceId, id);
  return row ? toPerson(row) : undefined;
}

export type UpsertOutcome = { person: Person; outcome: Upserted };

function newPersonRow(now: Date, workspaceId: string, body: UpsertPersonBody): PeopleTable {
  return {
    id: newId('per', now),
    workspace_id: workspaceId,
    email: body.email,
    name: body.name ?? null,
    title: body.title ?? null,
    department: body.department ?? null,
    employment_status: body.employment_status ?? 'current',
    created_at: now.getTime(),
    updated_at: now.getTime(),
  };
}

/** Idempotent on the email: the same body twice creates once and then changes nothing. */
export async function upsertPerson(
  deps: ComplianceDeps,
  workspaceId: string,
  body: UpsertPersonBody,
): Promise<UpsertOutcome> {
  const email = body.email.toLowerCase();
  return inTransaction(deps.db, async (trx) => {
    const { row, outcome } = await upsertByUniqueKey<PeopleTable>({
      find: () =>
        lockingRead(
          trx,
          trx
            .selectFrom('people')
            .selectAll()
            .where('workspace_id', '=', workspaceId)
            .where('email', '=', email),
        ).executeTakeFirst(),
      create: () => newPersonRow(deps.clock.now(), workspaceId, { ...body, email }),
      insert: (created) =>
        trx
          .insertInto('people')
          .values(created)
          .onConflict((oc) => oc.columns(['workspace_id', 'email']).doNothing())
          .executeTakeFirst(),
      update: (stored) => applyChanges(trx, deps.clock, stored, { ...body, email }),
    });
    const person = toPerson(row);
    if (outcome === 'created') {
      await publishEvent(trx, deps.clock, { workspaceId, type: 'person.created', data: person });
    }
    return { person, outcome };
  });
}

const emailTaken: ComplianceError = {
  code: 'conflict',
  field: 'email',
  message: 'Another person has this email.',
};

/** A new email must stay unique; the constraint decides, so two concurrent changes cannot both win. */
export async function updatePerson(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdatePersonBody,
): Promise<Result<Person, ComplianceError>> {
  try {
    return await inTransaction(deps.db, async (trx) => {
      const existing = await lockWorkspaceRow(trx, 'people', workspaceId, id);
      if (!existing) return err(notFound);
      const updated = await applyChanges(trx, deps.clock, existing, {
        ...body,
        email: body.email?.toLowerCase(),
      });
      return ok(toPerson(updated.row));
    });
  } catch (error) {
    if (isUniqueViolation(error)) return err(emailTaken);
    throw error;
  }
}

async function applyChanges(
  trx: Tx,
  clock: Clock,
  existing: PeopleTable,
  changes: Partial<Pick<PeopleTable, 'email' | 'name' | 'title' | 'department' | 'employment_status'>>,
): Promise<{ row: PeopleTable; changed: boolean }> {
  const keys = changedKeys(existing, changes);
  if (keys.length === 0) return { row: existing, changed: false };
  const row: PeopleTable = { ...existing, updated_at: clock.now().getTime() };
  for (const key of keys) Object.assign(row, { [key]: changes[key] });
  const { id, workspace_id, created_at, ...columns } = row;
  await trx
    .updateTable('people')
    .set(columns)
    .where('workspace_id', '=', workspace_id)
    .where('id', '=', id)
    .execute();
  await publishEvent(trx, clock, { workspaceId: workspace_id, type: 'person.updated', data: toPerson(row) });
  return { row, changed: true };
}
