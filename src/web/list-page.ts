import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type TSchema, Type } from 'typebox';
import { readPageAt } from '../db/cursor.ts';
import { everyPage, type Page, type PageRequest } from '../db/keyset.ts';
import { csvLine } from '../shared/csv.ts';
import { STORABLE_TEXT } from '../shared/text.ts';
import { CalendarDate } from '../shared/wire.ts';
import { sendPage } from './render.ts';

/** A filter of a list page, read from the query string; an empty value is no filter. */
export type ListFilterField =
  | { name: string; label: string; kind: 'search' }
  | { name: string; label: string; kind: 'date' }
  | {
      name: string;
      label: string;
      kind: 'select';
      /** The label of the empty choice, which filters nothing ("All statuses"). */
      allLabel: string;
      options: readonly { value: string; label: string }[];
    }
  | {
      name: string;
      label: string;
      /**
       * A choice among the workspace's records (people, controls): the page fills `options` when
       * it is shown, so the query string only bounds the id, and an id of no record lists nothing,
       * as the REST API's filters do.
       */
      kind: 'record';
      allLabel: string;
      options: readonly { value: string; label: string }[];
    };

export type ListFilter = Record<string, string>;

/** The rows of a list as a spreadsheet: a header and one row per item. */
export interface ListCsv<Item> {
  header: readonly string[];
  row(item: Item): readonly (string | number | boolean | null | undefined)[];
}

/** What a list's links are made of: its path and its filters. */
export interface ListShape {
  /** The list's path under `/w/:workspaceId` (`controls`), also its cursor's scope. */
  name: string;
  fields: readonly ListFilterField[];
}

/**
 * One list of a workspace's records as a page: its filters (in the query string, so a filtered
 * list is a link), keyset paging, the empty state and, with `csv`, the same rows as a download.
 */
export interface ListDefinition<Item> extends ListShape {
  pageSize: number;
  read(workspaceId: string, filter: ListFilter, page: PageRequest): Promise<Page<Item>>;
  csv?: ListCsv<Item>;
}

/** What a list page's template gets: the items of this page and everything around them. */
export interface ListView<Item> {
  items: Item[];
  /** The filters with their current values, for the filter form. */
  fields: (ListFilterField & { value: string })[];
  filter: ListFilter;
  path: string;
  isFiltered: boolean;
  isFirstPage: boolean;
  firstPageUrl: string;
  nextPageUrl: string | null;
  csvUrl: string | null;
}

const SEARCH_MAX = 200;
const EXPORT_PAGE_SIZE = 500;

function fieldSchema(field: ListFilterField): TSchema {
  switch (field.kind) {
    case 'search':
      // Storable text only: PostgreSQL refuses a NUL in a query's parameters.
      return Type.String({ maxLength: SEARCH_MAX, pattern: STORABLE_TEXT });
    case 'date':
      return Type.Union([Type.Literal(''), CalendarDate]);
    case 'select':
      return Type.Union([Type.Literal(''), ...field.options.map((option) => Type.Literal(option.value))]);
    case 'record':
      return Type.String({ maxLength: 64, pattern: STORABLE_TEXT });
  }
}

/** The fields with the options of their `record` choices, read for the page being shown. */
export function withRecordChoices(
  fields: readonly ListFilterField[],
  choices: Record<string, readonly { value: string; label: string }[]>,
): ListFilterField[] {
  return fields.map((field) =>
    field.kind === 'record' ? { ...field, options: choices[field.name] ?? field.options } : field,
  );
}

/**
 * The query string a list page takes: its filters, a cursor and a notice; anything else is left
 * alone. A value the list does not offer (an unknown status, a repeated parameter, text too long)
 * is refused by validation, with the app's error page.
 */
export function listQuerySchema(definition: ListShape, extra: Record<string, TSchema> = {}) {
  return Type.Object({
    ...Object.fromEntries(definition.fields.map((field) => [field.name, Type.Optional(fieldSchema(field))])),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2000 })),
    notice: Type.Optional(Type.String({ maxLength: 40 })),
    ...Object.fromEntries(Object.entries(extra).map(([name, schema]) => [name, Type.Optional(schema)])),
  });
}

/** The filter a validated query names: its non-empty values, searches trimmed. */
export function filterOf(definition: ListShape, query: Record<string, unknown>): ListFilter {
  const filter: ListFilter = {};
  for (const field of definition.fields) {
    const value = query[field.name];
    const text = typeof value === 'string' ? value.trim() : '';
    if (text !== '') filter[field.name] = text;
  }
  return filter;
}

function withQuery(path: string, params: Record<string, string>): string {
  const text = new URLSearchParams(params).toString();
  return text ? `${path}?${text}` : path;
}

function cursorScope(workspaceId: string, name: string, filter: ListFilter) {
  return { workspaceId, list: `app/${name}`, filter };
}

/** A list page's link, filtered as `filter` says (and `extra`, such as a notice). */
export function listUrl(
  workspaceId: string,
  definition: ListShape,
  filter: ListFilter,
  extra: Record<string, string> = {},
): string {
  return withQuery(`/w/${workspaceId}/${definition.name}`, { ...filter, ...extra });
}

/**
 * One page of the list as the query asks; undefined when its cursor is not one this list gave
 * for this filter (a link edited by hand, or one of another workspace).
 */
export async function readList<Item>(
  definition: ListDefinition<Item>,
  workspaceId: string,
  query: Record<string, unknown>,
): Promise<ListView<Item> | undefined> {
  const filter = filterOf(definition, query);
  const scope = cursorScope(workspaceId, definition.name, filter);
  const cursor = typeof query.cursor === 'string' ? query.cursor : undefined;
  const page = await readPageAt(
    (at) => definition.read(workspaceId, filter, at),
    scope,
    definition.pageSize,
    cursor,
  );
  if (!page) return undefined;
  const path = `/w/${workspaceId}/${definition.name}`;
  return {
    items: page.items,
    fields: definition.fields.map((field) => ({ ...field, value: filter[field.name] ?? '' })),
    filter,
    path,
    isFiltered: Object.keys(filter).length > 0,
    isFirstPage: cursor === undefined,
    firstPageUrl: withQuery(path, filter),
    nextPageUrl: page.nextCursor ? withQuery(path, { ...filter, cursor: page.nextCursor }) : null,
    csvUrl: definition.csv ? withQuery(`${path}.csv`, filter) : null,
  };
}

/** The list's rows as CSV lines, read a page at a time: the header, then one chunk per page. */
async function* listCsv<Item>(
  definition: ListDefinition<Item>,
  csv: ListCsv<Item>,
  workspaceId: string,
  filter: ListFilter,
): AsyncGenerator<string> {
  const line = (cells: readonly (string | number | boolean | null | undefined)[]) =>
    csvLine(cells.map((cell) => (cell === null || cell === undefined ? null : String(cell))));
  yield line(csv.header);
  const pages = everyPage((page) => definition.read(workspaceId, filter, page), EXPORT_PAGE_SIZE);
  for await (const items of pages) yield items.map((item) => line(csv.row(item))).join('');
}

/**
 * The whole list, filtered as the page shows it, as a CSV download: read a page at a time and
 * written as it goes, every cell through the formula-neutralising `csvField`.
 */
export function sendListCsv<Item>(
  reply: FastifyReply,
  definition: ListDefinition<Item>,
  workspaceId: string,
  query: Record<string, unknown>,
): FastifyReply {
  const csv = definition.csv;
  if (!csv) throw new Error(`the list ${definition.name} has no CSV`);
  const filter = filterOf(definition, query);
  return reply
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${definition.name}-${workspaceId}.csv"`)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(Readable.from(listCsv(definition, csv, workspaceId, filter)));
}

/** The answer to a list link whose cursor `readList` did not take. */
export function sendInvalidListLink(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendPage(
    request,
    reply,
    'error',
    {
      title: 'Not a page of this list',
      heading: 'This list cannot be shown',
      message: 'The link to this page of the list is not valid; start again from the first page.',
      errorCode: 'invalid_cursor',
    },
    400,
  );
}
