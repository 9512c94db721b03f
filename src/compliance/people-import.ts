import { type Static, Type } from 'typebox';
import type { AuditSource } from '../audit/index.ts';
import type { Db } from '../db/schema.ts';
import { inTransaction } from '../db/transaction.ts';
import { type CsvRecord, parseCsv } from '../shared/csv-parse.ts';
import { isEmailAddress } from '../shared/email.ts';
import { err, ok, type Result } from '../shared/result.ts';
import { isStorableText } from '../shared/text.ts';
import { Nullable } from '../shared/wire.ts';
import type { EmploymentStatus, PeopleTable } from './compliance.table.ts';
import {
  EMPLOYMENT_STATUSES,
  type PersonFields,
  plannedPersonChanges,
  type UpsertPersonBody,
  upsertPersonIn,
} from './people.ts';
import { type ComplianceDeps, changedKeys } from './shared.ts';

export const PEOPLE_IMPORT_MAX_BYTES = 1_048_576;
export const PEOPLE_IMPORT_MAX_ROWS = 5_000;
const TEXT_MAX = 200;
const COLUMNS = ['email', 'name', 'title', 'department', 'employment_status'] as const;
type Column = (typeof COLUMNS)[number];

const REFUSALS = {
  invalid_email: 'The email is not a valid address.',
  duplicate_email: 'Another row of the file has this email; none of its rows is imported.',
  too_long: `A value is longer than ${TEXT_MAX} characters.`,
  invalid_text: 'A value holds a character that cannot be stored (NUL, a lone surrogate).',
  unknown_employment_status: `employment_status is not one of ${EMPLOYMENT_STATUSES.join(', ')}.`,
  wrong_field_count: 'The row does not have as many fields as the header.',
} as const;
type RefusalCode = keyof typeof REFUSALS;

const ImportAction = Type.Enum(['add', 'change', 'unchanged', 'refused'], {
  description:
    'add: a new person; change: the person with this email gets new values; unchanged: the file ' +
    'matches the directory; refused: the row is not imported (`refusal` says why).',
});

export const PeopleImportRow = Type.Object({
  line: Type.Integer({ description: 'The line of the file the row starts on (the header is line 1).' }),
  email: Type.String({ description: 'As written in the file (lower-cased when valid).' }),
  action: ImportAction,
  person_id: Nullable(
    Type.String({ description: 'The person, when there is one (null for add in a preview).' }),
  ),
  changes: Type.Array(
    Type.Object({ field: Type.String(), from: Nullable(Type.String()), to: Nullable(Type.String()) }),
    { description: 'For change: each field that changes.' },
  ),
  refusal: Nullable(
    Type.Object({
      code: Type.Enum(Object.keys(REFUSALS) as RefusalCode[]),
      message: Type.String(),
    }),
  ),
});
export type PeopleImportRow = Static<typeof PeopleImportRow>;

export const PeopleImportResult = Type.Object(
  {
    dry_run: Type.Boolean({ description: 'true: a preview, nothing was written.' }),
    counts: Type.Object({
      add: Type.Integer(),
      change: Type.Integer(),
      unchanged: Type.Integer(),
      refused: Type.Integer(),
    }),
    rows: Type.Array(PeopleImportRow),
  },
  {
    description: 'Each row of the file, classified (a preview) or applied.',
    examples: [
      {
        dry_run: true,
        counts: { add: 1, change: 0, unchanged: 0, refused: 1 },
        rows: [
          {
            line: 2,
            email: 'ada@example.com',
            action: 'add',
            person_id: null,
            changes: [],
            refusal: null,
          },
          {
            line: 3,
            email: 'not-an-email',
            action: 'refused',
            person_id: null,
            changes: [],
            refusal: { code: 'invalid_email', message: REFUSALS.invalid_email },
          },
        ],
      },
    ],
  },
);
export type PeopleImportResult = Static<typeof PeopleImportResult>;

/** Why a whole file is refused; nothing of it is imported. */
export interface PeopleImportError {
  code: 'invalid_import';
  reason: 'too_large' | 'too_many_rows' | 'malformed' | 'no_header' | 'no_email_column' | 'unknown_column';
  message: string;
}

function fileError(reason: PeopleImportError['reason'], message: string): PeopleImportError {
  return { code: 'invalid_import', reason, message };
}

interface ParsedRow {
  line: number;
  email: string;
  body?: UpsertPersonBody;
  refusal?: RefusalCode;
}

/**
 * The rows of a file: the header names the columns (`email` required; `name`, `title`,
 * `department`, `employment_status` optional, in any order, case-insensitive); a column that is
 * absent leaves that field as it is, an empty cell clears a text field and leaves
 * `employment_status` as it is (new people are current).
 */
function parseImport(csvText: string): Result<ParsedRow[], PeopleImportError> {
  if (Buffer.byteLength(csvText) > PEOPLE_IMPORT_MAX_BYTES) {
    return err(fileError('too_large', `The file is larger than ${PEOPLE_IMPORT_MAX_BYTES} bytes (1 MiB).`));
  }
  const parsed = parseCsv(csvText, PEOPLE_IMPORT_MAX_ROWS + 1);
  if (!parsed.ok) {
    return parsed.error === 'too_many'
      ? err(fileError('too_many_rows', `The file has more than ${PEOPLE_IMPORT_MAX_ROWS} rows.`))
      : err(fileError('malformed', `Line ${parsed.error.line}: ${parsed.error.message}.`));
  }
  const [header, ...records] = parsed.value;
  if (!header)
    return err(fileError('no_header', 'The file is empty: it needs a header row naming its columns.'));
  const columns = header.fields.map((name) => name.trim().toLowerCase());
  const unknown = columns.find(
    (name, index) => !(COLUMNS as readonly string[]).includes(name) || columns.indexOf(name) !== index,
  );
  if (unknown !== undefined) {
    return err(
      fileError(
        'unknown_column',
        `The header names "${unknown.slice(0, 50)}" twice or is not one of ${COLUMNS.join(', ')}.`,
      ),
    );
  }
  if (!columns.includes('email')) return err(fileError('no_email_column', 'The header has no email column.'));
  const rows = records.map((record) => parseRow(columns as Column[], record));
  const counts = new Map<string, number>();
  for (const row of rows) if (!row.refusal) counts.set(row.email, (counts.get(row.email) ?? 0) + 1);
  return ok(
    rows.map((row) =>
      !row.refusal && (counts.get(row.email) ?? 0) > 1
        ? { line: row.line, email: row.email, refusal: 'duplicate_email' }
        : row,
    ),
  );
}

function parseRow(columns: Column[], record: CsvRecord): ParsedRow {
  const cell = (column: Column) => {
    const index = columns.indexOf(column);
    return index === -1 ? undefined : (record.fields[index] ?? '').trim();
  };
  const rawEmail = cell('email') ?? '';
  const refused = (refusal: RefusalCode): ParsedRow => ({ line: record.line, email: rawEmail, refusal });
  if (record.fields.length !== columns.length) return refused('wrong_field_count');
  if (!isEmailAddress(rawEmail)) return refused('invalid_email');
  const body: UpsertPersonBody = { email: rawEmail.toLowerCase() };
  for (const column of ['name', 'title', 'department'] as const) {
    const value = cell(column);
    if (value === undefined) continue;
    if (value.length > TEXT_MAX) return refused('too_long');
    if (!isStorableText(value)) return refused('invalid_text');
    body[column] = value === '' ? null : value;
  }
  const status = cell('employment_status')?.toLowerCase();
  if (status) {
    if (!(EMPLOYMENT_STATUSES as readonly string[]).includes(status))
      return refused('unknown_employment_status');
    body.employment_status = status as EmploymentStatus;
  }
  return { line: record.line, email: body.email, body };
}

/** The people the file names, by email, 500 emails a query. */
async function peopleByEmail(
  db: Db,
  workspaceId: string,
  emails: string[],
): Promise<Map<string, PeopleTable>> {
  const found = new Map<string, PeopleTable>();
  for (let start = 0; start < emails.length; start += 500) {
    const rows = await db
      .selectFrom('people')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where('email', 'in', emails.slice(start, start + 500))
      .execute();
    for (const row of rows) found.set(row.email, row);
  }
  return found;
}

function classify(
  deps: ComplianceDeps,
  rows: ParsedRow[],
  existing: Map<string, PeopleTable>,
): PeopleImportRow[] {
  return rows.map((row) => {
    const base = { line: row.line, email: row.email, person_id: null, changes: [], refusal: null };
    if (row.refusal || !row.body) {
      const code = row.refusal ?? 'invalid_email';
      return { ...base, action: 'refused', refusal: { code, message: REFUSALS[code] } };
    }
    const stored = existing.get(row.email);
    if (!stored) return { ...base, action: 'add' };
    const planned = plannedPersonChanges(deps.clock, stored, row.body);
    const changes = planned.ok ? planned.value : {};
    const keys = changedKeys(stored, changes) as (keyof PersonFields)[];
    return {
      ...base,
      person_id: stored.id,
      action: keys.length === 0 ? 'unchanged' : 'change',
      changes: keys.map((field) => ({ field, from: stored[field] ?? null, to: changes[field] ?? null })),
    };
  });
}

function summarize(dryRun: boolean, rows: PeopleImportRow[]): PeopleImportResult {
  const counts = { add: 0, change: 0, unchanged: 0, refused: 0 };
  for (const row of rows) counts[row.action]++;
  return { dry_run: dryRun, counts, rows };
}

/** What importing the file would do, row by row; writes nothing. */
export async function previewPeopleImport(
  deps: ComplianceDeps,
  workspaceId: string,
  csvText: string,
): Promise<Result<PeopleImportResult, PeopleImportError>> {
  const parsed = parseImport(csvText);
  if (!parsed.ok) return parsed;
  const existing = await peopleByEmail(deps.db, workspaceId, emailsOf(parsed.value));
  return ok(summarize(true, classify(deps, parsed.value, existing)));
}

/**
 * Imports the rows the preview would add or change, through the upsert of `POST /people` (so each
 * change is audited and published), all in one transaction; refused rows are skipped. Applying the
 * same file twice changes nothing the second time.
 */
export async function applyPeopleImport(
  deps: ComplianceDeps,
  workspaceId: string,
  csvText: string,
  source: AuditSource,
): Promise<Result<PeopleImportResult, PeopleImportError>> {
  const parsed = parseImport(csvText);
  if (!parsed.ok) return parsed;
  return inTransaction(deps.db, async (trx) => {
    const rows = classify(deps, parsed.value, await peopleByEmail(trx, workspaceId, emailsOf(parsed.value)));
    const bodies = new Map(parsed.value.map((row) => [row.line, row.body]));
    for (const row of rows) {
      const body = bodies.get(row.line);
      if (!body || (row.action !== 'add' && row.action !== 'change')) continue;
      const upserted = await upsertPersonIn(trx, deps, workspaceId, body, source);
      if (!upserted.ok)
        throw new Error(`an import row the preview accepted was refused: ${upserted.error.code}`);
      row.person_id = upserted.value.person.id;
    }
    return ok(summarize(false, rows));
  });
}

function emailsOf(rows: ParsedRow[]): string[] {
  return rows.flatMap((row) => (row.refusal ? [] : [row.email]));
}
