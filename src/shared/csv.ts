import type { TSchema } from 'typebox';

/** A cell's text, or null for an empty cell. */
export type CsvCell = string | null;

/** A column of an export: its header and how a row gives its cell. */
export interface CsvColumn<Row> {
  header: string;
  cell(row: Row): CsvCell;
}

/**
 * One CSV field. A spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage
 * return as a formula, and names, addresses and user agents are anyone's to choose: such a cell
 * gets a leading `'` (OWASP's advice). Then quoted as RFC 4180 says when it needs to be.
 */
export function csvField(value: CsvCell): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** One record of the file, CRLF-terminated as RFC 4180 says. */
export function csvLine(fields: readonly CsvCell[]): string {
  return `${fields.map(csvField).join(',')}\r\n`;
}

/**
 * A CSV file written as its rows arrive: the header line first (also when no row follows), then
 * one chunk per batch, so a caller reading a page at a time holds one page in memory.
 */
export async function* csvChunks<Row>(
  columns: readonly CsvColumn<Row>[],
  batches: AsyncIterable<readonly Row[]>,
): AsyncGenerator<string> {
  yield csvLine(columns.map((column) => column.header));
  for await (const rows of batches) {
    if (rows.length > 0) yield rows.map((row) => csvLine(columns.map((column) => column.cell(row)))).join('');
  }
}

/** What a JSON value shows in a cell: text as it is, lists of plain values joined with `;`. */
export function cellOf(value: unknown): CsvCell {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((item) => item === null || typeof item !== 'object'))
    return value.map((item) => cellOf(item) ?? '').join(';');
  return JSON.stringify(value);
}

type JsonSchema = { type?: unknown; properties?: Record<string, JsonSchema>; anyOf?: JsonSchema[] };

/** The named properties of an object schema, or of every object member of a union (`Nullable`). */
function namedProperties(schema: JsonSchema): Record<string, JsonSchema> | undefined {
  if (schema.properties) return schema.properties;
  const members = (schema.anyOf ?? []).map(namedProperties).filter((props) => props !== undefined);
  return members.length > 0 ? Object.assign({}, ...members) : undefined;
}

function fieldOf(row: unknown, key: string): unknown {
  return row !== null && typeof row === 'object' ? (row as Record<string, unknown>)[key] : undefined;
}

/**
 * The columns of a record's JSON schema, in the schema's order: a property per column; an object
 * property (nullable or not) spread one level into `name.field` columns; anything deeper, and lists
 * of objects, as JSON in one cell. Only what the schema names is exported, as in the JSON answer.
 */
export function csvColumnsOf(schema: TSchema): CsvColumn<unknown>[] {
  const properties = namedProperties(schema as JsonSchema) ?? {};
  return Object.entries(properties).flatMap(([key, property]): CsvColumn<unknown>[] => {
    const nested = namedProperties(property);
    if (!nested) return [{ header: key, cell: (row) => cellOf(fieldOf(row, key)) }];
    return Object.keys(nested).map((inner) => ({
      header: `${key}.${inner}`,
      cell: (row) => cellOf(fieldOf(fieldOf(row, key), inner)),
    }));
  });
}
