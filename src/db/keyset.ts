import { type RawBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely';
import { isStorableText } from '../shared/text.ts';

export type SortDirection = 'asc' | 'desc';

/**
 * A list's order: its columns, the last one unique (the id) so the order is total, all in one
 * direction so that "after a position" is one row-value comparison an index can seek to.
 */
export interface KeysetOrder {
  direction: SortDirection;
  columns: readonly SortColumn[];
}

/** A sort column and its SQL type: `integer` is 32-bit in PostgreSQL, `bigint` 64-bit (a time in ms). */
export interface SortColumn {
  column: string;
  type: 'integer' | 'bigint' | 'string';
}

/** The values of the sort columns of the last row a page returned. */
export type Position = (string | number)[];

/** A page request: how many, and after which position (from the previous page). */
export interface PageRequest {
  limit: number;
  after?: Position;
}

/** A page of a list as domain functions answer it: the items and where the next page starts. */
export interface Page<Item> {
  items: Item[];
  next: Position | null;
}

/**
 * Every page of a list, `pageSize` rows at a time, each read after the last row of the one before:
 * an export of any length holds one page in memory.
 */
export async function* everyPage<Item>(
  readPage: (page: PageRequest) => Promise<Page<Item>>,
  pageSize: number,
): AsyncGenerator<Item[]> {
  let after: Position | undefined;
  do {
    const page = await readPage({ limit: pageSize, after });
    yield page.items;
    after = page.next ?? undefined;
  } while (after);
}

export interface KeysetPage<Row> {
  rows: Row[];
  /** Where the next page starts; null on the last page. */
  next: Position | null;
}

/** A position that cannot come from this order: a cursor was forged or belongs to another list. */
export class PositionMismatchError extends Error {
  constructor() {
    super('the position does not fit the order of this list');
    this.name = 'PositionMismatchError';
  }
}

/** The longest string a position may carry; ids and every other sort column are shorter. */
const MAX_POSITION_STRING = 128;

const INTEGER_MIN = -(2 ** 31);
const INTEGER_MAX = 2 ** 31 - 1;

/**
 * Whether a value can be compared with a column of this type without the database refusing it
 * (PostgreSQL casts the parameter to the column's type, so 2^31 against an `integer` is an error).
 * A `bigint` position must also be a safe integer, as every value this service stores is.
 */
function fitsColumn(type: SortColumn['type'], value: string | number | undefined): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value) && (value as number) >= INTEGER_MIN && (value as number) <= INTEGER_MAX;
    case 'bigint':
      return Number.isSafeInteger(value);
    case 'string':
      return typeof value === 'string' && value.length <= MAX_POSITION_STRING && isStorableText(value);
  }
}

function fitsOrder(order: KeysetOrder, position: Position): boolean {
  return (
    position.length === order.columns.length &&
    order.columns.every(({ type }, index) => fitsColumn(type, position[index]))
  );
}

/**
 * Keyset pagination: rows strictly after `after` in `order`, `limit` of them. The cost of a page
 * depends on the page size, not on how many rows precede it, given an index on the order columns.
 */
export async function fetchPage<DB, TB extends keyof DB, Row extends Record<string, unknown>>(
  query: SelectQueryBuilder<DB, TB, Row>,
  order: KeysetOrder,
  page: PageRequest,
): Promise<KeysetPage<Row>> {
  let ordered = query;
  const { after } = page;
  if (after) {
    if (!fitsOrder(order, after)) throw new PositionMismatchError();
    ordered = ordered.where(afterPosition(order, after));
  }
  for (const { column } of order.columns) ordered = ordered.orderBy(sql.ref(column), order.direction);
  // A literal, not a parameter: SQLite plans `LIMIT ?` anew on each run, and page sizes are few.
  const rows = await ordered.limit(sql.lit(pageLimit(page.limit) + 1)).execute();
  if (rows.length <= page.limit) return { rows, next: null };
  rows.length = page.limit;
  const last = rows[rows.length - 1] as Row;
  return { rows, next: order.columns.map(({ column }) => last[columnName(column)] as string | number) };
}

/** The page size as a whole number, since it is written into the SQL text. */
function pageLimit(limit: number): number {
  if (!Number.isSafeInteger(limit) || limit < 1)
    throw new Error(`page size ${limit} is not a positive integer`);
  return limit;
}

/** `(a, b) > (x, y)` (or `<` for a descending order): both dialects seek an index on (a, b) with it. */
function afterPosition(order: KeysetOrder, after: Position): RawBuilder<SqlBool> {
  const columns = sql.join(order.columns.map(({ column }) => sql.ref(column)));
  const values = sql.join(after.map((value) => sql.val(value)));
  const comparison = sql.raw(order.direction === 'asc' ? '>' : '<');
  return sql<SqlBool>`(${columns}) ${comparison} (${values})`;
}

function columnName(reference: string): string {
  return reference.slice(reference.lastIndexOf('.') + 1);
}

/** Oldest first: ids are time-ordered, so the id alone is the order of creation. */
export const CREATION_ORDER: KeysetOrder = { direction: 'asc', columns: [{ column: 'id', type: 'string' }] };
