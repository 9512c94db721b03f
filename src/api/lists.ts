import type { FastifyReply, FastifyRequest } from 'fastify';
import { type Page, type PageRequest, PositionMismatchError } from '../db/keyset.ts';
import { problem, sendProblem } from '../http/problem.ts';
import { workspaceOf } from './auth.ts';
import { decodeCursor, encodeCursor, splitListQuery } from './pagination.ts';

type ListQuery = { limit?: number; cursor?: string };

/**
 * Answers a list request: the filters and page of the query string, the workspace of the key, and
 * an opaque cursor for the next page. A cursor of another list, filter or workspace is a 400, sent
 * here; the answer is then undefined (never the sent reply: awaiting it, a thenable, gives nothing).
 */
export async function answerList<Q extends ListQuery, Item>(
  request: FastifyRequest,
  reply: FastifyReply,
  list: string,
  query: Q,
  fetch: (workspaceId: string, filter: Omit<Q, 'limit' | 'cursor'>, page: PageRequest) => Promise<Page<Item>>,
): Promise<{ data: Item[]; next_cursor: string | null } | undefined> {
  const workspaceId = workspaceOf(request);
  const { filter, limit, cursor } = splitListQuery(query);
  const scope = { workspaceId, list, filter };
  const after = cursor === undefined ? undefined : decodeCursor(cursor, scope);
  if (cursor !== undefined && after === undefined) {
    sendInvalidCursor(request, reply);
    return undefined;
  }
  let page: Page<Item>;
  try {
    page = await fetch(workspaceId, filter, { limit, after });
  } catch (error) {
    if (error instanceof PositionMismatchError) {
      sendInvalidCursor(request, reply);
      return undefined;
    }
    throw error;
  }
  return { data: page.items, next_cursor: page.next ? encodeCursor(page.next, scope) : null };
}

function sendInvalidCursor(request: FastifyRequest, reply: FastifyReply): void {
  sendProblem(
    reply,
    problem(request, 400, 'invalid_cursor', 'The cursor is not one this list gave out with these filters.', [
      { path: 'querystring/cursor', message: 'is not a cursor of this list and filter' },
    ]),
  );
}
