import { type Static, type TObject, type TProperties, type TSchema, Type } from 'typebox';
import type { Position } from '../db/keyset.ts';
import { sha256Hex } from '../shared/ids.ts';
import { canonicalJson } from '../shared/jcs.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

const pageProperties = {
  limit: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      description: `Page size, default ${DEFAULT_PAGE_SIZE}.`,
    }),
  ),
  cursor: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 512,
      description: '`next_cursor` of the previous page, with the same filters.',
    }),
  ),
};

/** A list's query string: its filters plus `limit` and `cursor`; unknown parameters are refused. */
export function listQuery<P extends TProperties>(filter: TObject<P>) {
  return Type.Object({ ...filter.properties, ...pageProperties }, { additionalProperties: false });
}

/** The item schema of each page schema `pageOf` made: what a list's CSV export has as its columns. */
const itemsOfPages = new WeakMap<TSchema, TSchema>();

/** `{ data, next_cursor }`: a page of a list, newest cursor last. */
export function pageOf<T extends TSchema>(item: T) {
  const page = Type.Object({
    data: Type.Array(item),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as `cursor` for the next page; null on the last page.',
    }),
  });
  itemsOfPages.set(page, item);
  return page;
}

/** The item schema of a list's page schema; undefined for any other schema. */
export function pageItemSchema(schema: unknown): TSchema | undefined {
  return typeof schema === 'object' && schema !== null ? itemsOfPages.get(schema as TSchema) : undefined;
}

type PageQuery = Static<TObject<typeof pageProperties>>;

/**
 * A cursor is opaque to clients: the position of the last row plus a fingerprint of the workspace,
 * the list and its filters, so a cursor replayed with other filters (or by another workspace's
 * key) is refused instead of silently skipping rows.
 */
export interface CursorScope {
  workspaceId: string;
  list: string;
  filter: Record<string, unknown>;
}

function fingerprint(scope: CursorScope): string {
  return sha256Hex(canonicalJson([scope.workspaceId, scope.list, scope.filter])).slice(0, 16);
}

export function encodeCursor(position: Position, scope: CursorScope): string {
  return Buffer.from(JSON.stringify({ p: position, f: fingerprint(scope) })).toString('base64url');
}

/** The position a cursor names, or undefined when it is not one of ours for this list and filter. */
export function decodeCursor(cursor: string, scope: CursorScope): Position | undefined {
  try {
    const decoded = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as {
      p?: unknown;
      f?: unknown;
    };
    const position = decoded.p;
    if (decoded.f !== fingerprint(scope) || !Array.isArray(position)) return undefined;
    if (!position.every((value) => typeof value === 'string' || typeof value === 'number')) return undefined;
    return position;
  } catch {
    return undefined;
  }
}

/** Splits a validated list query into its filter and the page request. */
export function splitListQuery<Q extends PageQuery>(
  query: Q,
): { filter: Omit<Q, 'limit' | 'cursor'>; limit: number; cursor?: string } {
  const { limit, cursor, ...filter } = query;
  return { filter, limit: limit ?? DEFAULT_PAGE_SIZE, cursor };
}
