import { type ExpressionBuilder, type SelectQueryBuilder, sql } from 'kysely';

export type SortDirection = 'asc' | 'desc';

/** One column of a list's order; the last one must be unique (the id) so the order is total. */
export interface SortKey {
  column: string;
  direction: SortDirection;
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

export interface KeysetPage<Row> {
  rows: Row[];
  /** Where the next page starts; null on the last page. */
  next: Position | null;
}

/**
 * Keyset pagination: rows strictly after `after` in `order`, `limit` of them. The cost of a page
 * depends on the page size, not on how many rows precede it, given an index on the order columns.
 */
export async function fetchPage<DB, TB extends keyof DB, Row extends Record<string, unknown>>(
  query: SelectQueryBuilder<DB, TB, Row>,
  order: readonly SortKey[],
  page: PageRequest,
): Promise<KeysetPage<Row>> {
  let ordered = query;
  const { after } = page;
  if (after) {
    if (after.length !== order.length) throw new RangeError('a position must name every sort column');
    ordered = ordered.where((eb) => afterPosition(eb, order, after));
  }
  for (const key of order) ordered = ordered.orderBy(sql.ref(key.column), key.direction);
  const rows = await ordered.limit(page.limit + 1).execute();
  if (rows.length <= page.limit) return { rows, next: null };
  rows.length = page.limit;
  const last = rows[rows.length - 1] as Row;
  return { rows, next: order.map((key) => last[columnName(key.column)] as string | number) };
}

/** (a > x) or (a = x and b > y) or ..., each comparison in its column's direction. */
function afterPosition<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  order: readonly SortKey[],
  after: Position,
) {
  return eb.or(
    order.map((key, index) =>
      eb.and([
        ...order
          .slice(0, index)
          .map((earlier, i) => eb(sql.ref(earlier.column), '=', after[i] as string | number)),
        eb(sql.ref(key.column), key.direction === 'asc' ? '>' : '<', after[index] as string | number),
      ]),
    ),
  );
}

function columnName(reference: string): string {
  return reference.slice(reference.lastIndexOf('.') + 1);
}
