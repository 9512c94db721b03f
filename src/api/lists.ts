import { Readable } from 'node:stream';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  FastifySchema,
  onRequestHookHandler,
} from 'fastify';
import { readPageAt } from '../db/cursor.ts';
import { everyPage, type Page, type PageRequest } from '../db/keyset.ts';
import { problem, sendProblem } from '../http/problem.ts';
import { routeHooks } from '../http/route-hooks.ts';
import type { Clock } from '../shared/clock.ts';
import { type CsvColumn, csvChunks, csvColumnsOf } from '../shared/csv.ts';
import { workspaceOf } from './auth.ts';
import { pageItemSchema, splitListQuery } from './pagination.ts';

/** How lists export as CSV: rows read per query, and the clock that dates the file's name. */
export interface ListExportSettings {
  pageSize: number;
  clock: Clock;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on the requests of a scope whose lists export (`enableListExports`). */
    listExport?: ListExportSettings;
  }
}

/**
 * Every list of `scope` (a route whose 200 is a `pageOf` schema and whose handler calls
 * `answerList`) also answers `Accept: text/csv`; its answers vary with `Accept`.
 */
export function enableListExports(scope: FastifyInstance, settings: ListExportSettings): void {
  scope.decorateRequest('listExport', { getter: () => settings });
  // On the lists alone, decided once per route: a hook of the scope ran on every API request and
  // built the request's route options to find out.
  scope.addHook('onRoute', (route) => {
    if (!listItemSchema(route.schema)) return;
    route.onRequest = [...routeHooks(route.onRequest), varyWithAccept];
  });
}

const varyWithAccept: onRequestHookHandler = (_request, reply, done) => {
  reply.header('vary', 'Accept');
  done();
};

/** The item schema of a route whose 200 is a page of items; undefined for any other route. */
function listItemSchema(schema: FastifySchema | undefined) {
  return pageItemSchema((schema?.response as Record<string, unknown> | undefined)?.[200]);
}

type ListQuery = { limit?: number; cursor?: string };

/**
 * Answers a list request: the filters and page of the query string, the workspace of the key, and
 * an opaque cursor for the next page. A cursor of another list, filter or workspace is a 400, sent
 * here; the answer is then undefined (never the sent reply: awaiting it, a thenable, gives nothing).
 * Asked for CSV, it sends every row the filters match as a CSV file instead, and answers undefined
 * once the file is sent.
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
  if (asksForCsv(request)) {
    await sendCsvExport(request, reply, list, (page) => fetch(workspaceId, filter, page));
    return undefined;
  }
  const page = await readPageAt(
    (at) => fetch(workspaceId, filter, at),
    { workspaceId, list, filter },
    limit,
    cursor,
  );
  if (!page) {
    sendInvalidCursor(request, reply);
    return undefined;
  }
  return { data: page.items, next_cursor: page.nextCursor };
}

function sendInvalidCursor(request: FastifyRequest, reply: FastifyReply): void {
  sendProblem(
    reply,
    problem(request, 400, 'invalid_cursor', 'The cursor is not one this list gave out with these filters.', [
      { path: 'querystring/cursor', message: 'is not a cursor of this list and filter' },
    ]),
  );
}

/** The quality an `Accept` header gives a media type: that of the most specific range matching it. */
function qualityOf(accept: string, mediaType: string): number {
  const anySubtype = `${mediaType.slice(0, mediaType.indexOf('/'))}/*`;
  let best = { specificity: -1, quality: 0 };
  for (const range of accept.split(',')) {
    const [name = '', ...parameters] = range.split(';').map((part) => part.trim().toLowerCase());
    const specificity = [mediaType, anySubtype, '*/*'].indexOf(name);
    if (specificity === -1 || (best.specificity !== -1 && specificity >= best.specificity)) continue;
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const quality = q === undefined ? 1 : Number(q.slice(2));
    best = { specificity, quality: quality >= 0 && quality <= 1 ? quality : 0 };
  }
  return best.quality;
}

/**
 * Whether the client prefers CSV to JSON. No `Accept`, any type, JSON, or only types no list has:
 * JSON, as before lists exported (no 406), so only a client that asks for CSV gets it.
 */
export function asksForCsv(request: FastifyRequest): boolean {
  const accept = request.headers.accept;
  if (!accept) return false;
  const csv = qualityOf(accept, 'text/csv');
  return csv > 0 && csv > qualityOf(accept, 'application/json');
}

const columnsOfItems = new WeakMap<object, CsvColumn<unknown>[]>();

/**
 * Every row of the list as CSV, columns from the route's item schema, read `pageSize` rows at a
 * time and written as read. The first page is read before the answer starts, so a failure there is
 * a 500 problem rather than a cut-off file; a later failure cuts the file off (no last chunk).
 */
async function sendCsvExport<Item>(
  request: FastifyRequest,
  reply: FastifyReply,
  list: string,
  readPage: (page: PageRequest) => Promise<Page<Item>>,
): Promise<void> {
  const item = listItemSchema(request.routeOptions.schema);
  const settings = request.listExport;
  if (!item || !settings) throw new Error(`route ${request.routeOptions.url} cannot export its list`);
  let columns = columnsOfItems.get(item);
  if (!columns) {
    columns = csvColumnsOf(item);
    columnsOfItems.set(item, columns);
  }
  const pages = everyPage(readPage, settings.pageSize);
  const first = await pages.next();
  async function* batches() {
    if (first.done) return;
    yield first.value;
    yield* pages;
  }
  const date = settings.clock.now().toISOString().slice(0, 10);
  const name = `${list.replaceAll(/[^A-Za-z0-9_-]+/g, '-')}-${workspaceOf(request)}-${date}.csv`;
  await reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}"`)
    .header('cache-control', 'no-store')
    .send(Readable.from(csvChunks(columns, batches())));
}
