import { sha256Hex } from '../shared/ids.ts';
import { canonicalJson } from '../shared/jcs.ts';
import { type Page, type PageRequest, type Position, PositionMismatchError } from './keyset.ts';

/** A JSON value as an opaque token for a query string: base64url of its JSON text. */
export function encodeToken(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** The JSON value a token holds; undefined when it is not a token. */
export function decodeToken(token: string): unknown {
  try {
    return JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

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
  return encodeToken({ p: position, f: fingerprint(scope) });
}

/** The position a cursor names, or undefined when it is not one of ours for this list and filter. */
export function decodeCursor(cursor: string, scope: CursorScope): Position | undefined {
  const decoded = decodeToken(cursor) as { p?: unknown; f?: unknown } | null | undefined;
  const position = decoded?.p;
  if (decoded?.f !== fingerprint(scope) || !Array.isArray(position)) return undefined;
  if (!position.every((value) => typeof value === 'string' || typeof value === 'number')) return undefined;
  return position;
}

/** A page of a list with the cursor of the next one (null on the last page). */
export interface CursorPage<Item> {
  items: Item[];
  nextCursor: string | null;
}

/**
 * The page of a list a cursor asks for (the first page without one), `limit` items; undefined when
 * the cursor is not one this list gave out for this scope, or names a position its order cannot
 * have (forged).
 */
export async function readPageAt<Item>(
  read: (page: PageRequest) => Promise<Page<Item>>,
  scope: CursorScope,
  limit: number,
  cursor: string | undefined,
): Promise<CursorPage<Item> | undefined> {
  const after = cursor === undefined ? undefined : decodeCursor(cursor, scope);
  if (cursor !== undefined && after === undefined) return undefined;
  let page: Page<Item>;
  try {
    page = await read({ limit, after });
  } catch (error) {
    if (error instanceof PositionMismatchError) return undefined;
    throw error;
  }
  return { items: page.items, nextCursor: page.next ? encodeCursor(page.next, scope) : null };
}
