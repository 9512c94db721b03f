import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import { CREATION_ORDER, fetchPage, type Page, type PageRequest } from '../db/keyset.ts';
import type { Tx } from '../db/schema.ts';
import { inTransaction, isUniqueViolation, lockingRead } from '../db/transaction.ts';
import type { Clock } from '../shared/clock.ts';
import { EmailAddress } from '../shared/email.ts';
import { newId } from '../shared/ids.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { iso, Nullable, RecordId, Text, Timestamp } from '../shared/wire.ts';
import type { EmploymentStatus, PeopleTable } from './compliance.table.ts';
import {
  type ComplianceDeps,
  type ComplianceError,
  changedKeys,
  containsText,
  fieldChanges,
  findWorkspaceRow,
  lockWorkspaceRow,
  notFound,
  recordChange,
  type UpsertOutcome as Upserted,
  upsertByUniqueKey,
} from './shared.ts';

export const EMPLOYMENT_STATUSES = [
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
    left_on: Nullable(
      Type.String({
        format: 'date',
        description: 'When the person left (YYYY-MM-DD); only former people have one.',
      }),
    ),
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
        left_on: null,
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
  left_on: Type.Optional(
    Nullable(
      Type.String({
        format: 'date',
        description:
          'Marks the person as left (employment_status becomes former) on this date. A person who ' +
          'becomes former without one left today; only former people have one.',
      }),
    ),
  ),
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
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ employment_status: 'former', left_on: '2026-11-30' }],
  },
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
    left_on: row.left_on,
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

/** The person with this email (compared case-insensitively, as the directory keeps it). */
export async function findPersonByEmail(
  { db }: ComplianceDeps,
  workspaceId: string,
  email: string,
): Promise<Person | undefined> {
  const row = await db
    .selectFrom('people')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email.toLowerCase())
    .executeTakeFirst();
  return row ? toPerson(row) : undefined;
}

export type UpsertOutcome = { person: Person; outcome: Upserted };

export type PersonFields = Partial<
  Pick<PeopleTable, 'email' | 'name' | 'title' | 'department' | 'employment_status' | 'left_on'>
>;

const leftOnNeedsFormer: ComplianceError = {
  code: 'conflict',
  field: 'left_on',
  message: 'Only a former person has a left_on date: send employment_status former, or no left_on.',
};

function today(clock: Clock): string {
  return clock.now().toISOString().slice(0, 10);
}

/**
 * The employment status and leaving date a change leads to. A `left_on` date marks the person as
 * former; becoming former without one means leaving today (a new person added as former keeps
 * an unknown date); any other status has no date.
 */
function resolveLeaving(
  clock: Clock,
  existing: PeopleTable | undefined,
  changes: PersonFields,
): Result<Pick<PeopleTable, 'employment_status' | 'left_on'>, ComplianceError> {
  const employmentStatus =
    changes.employment_status ?? (changes.left_on ? 'former' : (existing?.employment_status ?? 'current'));
  if (employmentStatus !== 'former') {
    return changes.left_on
      ? err(leftOnNeedsFormer)
      : ok({ employment_status: employmentStatus, left_on: null });
  }
  let leftOn: string | null;
  if (changes.left_on !== undefined) leftOn = changes.left_on;
  else if (existing?.employment_status === 'former') leftOn = existing.left_on;
  else leftOn = existing ? today(clock) : null;
  return ok({ employment_status: 'former', left_on: leftOn });
}

/** What a request would set on a stored person, the leaving rule applied (see `resolveLeaving`). */
export function plannedPersonChanges(
  clock: Clock,
  existing: PeopleTable | undefined,
  requested: PersonFields,
): Result<PersonFields, ComplianceError> {
  const leaving = resolveLeaving(clock, existing, requested);
  return leaving.ok ? ok({ ...requested, ...leaving.value }) : leaving;
}

/** Idempotent on the email: the same body twice creates once and then changes nothing. */
export async function upsertPerson(
  deps: ComplianceDeps,
  workspaceId: string,
  body: UpsertPersonBody,
  source: AuditSource,
): Promise<Result<UpsertOutcome, ComplianceError>> {
  return inTransaction(deps.db, (trx) => upsertPersonIn(trx, deps, workspaceId, body, source));
}

/** The upsert of `upsertPerson`, in the caller's transaction (an import runs many in one). */
export async function upsertPersonIn(
  trx: Tx,
  deps: ComplianceDeps,
  workspaceId: string,
  body: UpsertPersonBody,
  source: AuditSource,
): Promise<Result<UpsertOutcome, ComplianceError>> {
  const email = body.email.toLowerCase();
  const find = () =>
    lockingRead(
      trx,
      trx.selectFrom('people').selectAll().where('workspace_id', '=', workspaceId).where('email', '=', email),
    ).executeTakeFirst();
  const leavingAsNew = resolveLeaving(deps.clock, undefined, body);
  if (!leavingAsNew.ok) return leavingAsNew;
  let refusal: ComplianceError | undefined;
  const { row, outcome } = await upsertByUniqueKey<PeopleTable>({
    find,
    create: () => {
      const now = deps.clock.now().getTime();
      return {
        id: newId('per', deps.clock.now()),
        workspace_id: workspaceId,
        email,
        name: body.name ?? null,
        title: body.title ?? null,
        department: body.department ?? null,
        ...leavingAsNew.value,
        created_at: now,
        updated_at: now,
      };
    },
    insert: (created) =>
      trx
        .insertInto('people')
        .values(created)
        .onConflict((oc) => oc.columns(['workspace_id', 'email']).doNothing())
        .executeTakeFirst(),
    update: async (stored) => {
      const applied = await applyChanges(trx, deps, stored, { ...body, email }, source);
      if (applied.ok) return applied.value;
      refusal = applied.error;
      return { row: stored, changed: false };
    },
  });
  if (refusal) return err(refusal);
  const person = toPerson(row);
  if (outcome === 'created') {
    await recordChange(trx, deps, source, {
      workspaceId,
      type: 'person.created',
      data: person,
      target: personTarget(person),
    });
  }
  return ok({ person, outcome });
}

const emailTaken: ComplianceError = {
  code: 'conflict',
  field: 'email',
  message: 'Another person in the directory has this email.',
};

/**
 * A new email must stay unique; the constraint decides, so two concurrent changes cannot both win.
 * Marking someone as left is `employment_status: former`, with `left_on` or not (see
 * `resolveLeaving`); it publishes `person.left` rather than `person.updated`.
 */
export async function updatePerson(
  deps: ComplianceDeps,
  workspaceId: string,
  id: string,
  body: UpdatePersonBody,
  source: AuditSource,
): Promise<Result<Person, ComplianceError>> {
  try {
    return await inTransaction(deps.db, async (trx) => {
      const existing = await lockWorkspaceRow(trx, 'people', workspaceId, id);
      if (!existing) return err(notFound);
      const applied = await applyChanges(
        trx,
        deps,
        existing,
        { ...body, email: body.email?.toLowerCase() },
        source,
      );
      return applied.ok ? ok(toPerson(applied.value.row)) : applied;
    });
  } catch (error) {
    if (isUniqueViolation(error)) return err(emailTaken);
    throw error;
  }
}

function personTarget(person: Person) {
  return { type: 'person', id: person.id, label: person.name ?? person.email };
}

async function applyChanges(
  trx: Tx,
  deps: ComplianceDeps,
  existing: PeopleTable,
  requested: PersonFields,
  source: AuditSource,
): Promise<Result<{ row: PeopleTable; changed: boolean }, ComplianceError>> {
  const planned = plannedPersonChanges(deps.clock, existing, requested);
  if (!planned.ok) return planned;
  const changes = planned.value;
  const keys = changedKeys(existing, changes);
  if (keys.length === 0) return ok({ row: existing, changed: false });
  const row: PeopleTable = { ...existing, updated_at: deps.clock.now().getTime() };
  for (const key of keys) Object.assign(row, { [key]: changes[key] });
  const { id, workspace_id, created_at, ...columns } = row;
  await trx
    .updateTable('people')
    .set(columns)
    .where('workspace_id', '=', workspace_id)
    .where('id', '=', id)
    .execute();
  const person = toPerson(row);
  const left = existing.employment_status !== 'former' && row.employment_status === 'former';
  await recordChange(trx, deps, source, {
    workspaceId: workspace_id,
    type: left ? 'person.left' : 'person.updated',
    data: person,
    target: personTarget(person),
    changes: fieldChanges(existing, changes),
  });
  return ok({ row, changed: true });
}
