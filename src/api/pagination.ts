import { type Static, type TObject, type TProperties, type TSchema, Type } from 'typebox';

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

/** Splits a validated list query into its filter and the page request. */
export function splitListQuery<Q extends PageQuery>(
  query: Q,
): { filter: Omit<Q, 'limit' | 'cursor'>; limit: number; cursor?: string } {
  const { limit, cursor, ...filter } = query;
  return { filter, limit: limit ?? DEFAULT_PAGE_SIZE, cursor };
}
