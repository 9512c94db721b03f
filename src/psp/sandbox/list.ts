import { invalidRequest, resourceMissing } from './errors.ts';
import { type Params, readInteger, readString } from './form.ts';
import type { ListSeek } from './state.ts';

const LIMIT = { min: 1, max: 100 } as const;
const DEFAULT_LIMIT = 10;

/** The provider's list envelope. */
export interface ListPage<T> {
  readonly object: 'list';
  readonly url: string;
  readonly data: T[];
  readonly has_more: boolean;
}

export interface ListSource<T> {
  /** What the objects are called in "No such ..." errors, e.g. `payment_intent`. */
  readonly resource: string;
  readonly url: string;
  position(id: string): number | undefined;
  seek(seek: ListSeek): T[];
}

/**
 * Pages a list newest first the way the provider does: `limit` (1 to 100, default 10), and
 * `starting_after` (the page after that object) or `ending_before` (the page before it, still
 * newest first); `has_more` says whether another page lies in the direction of travel.
 */
export function pageList<T>(source: ListSource<T>, query: Params): ListPage<T> {
  const limit = readInteger(query.limit, 'limit', LIMIT) ?? DEFAULT_LIMIT;
  const startingAfter = readString(query.starting_after, 'starting_after');
  const endingBefore = readString(query.ending_before, 'ending_before');
  if (startingAfter !== undefined && endingBefore !== undefined) {
    throw invalidRequest('You may only specify one of these parameters: ending_before, starting_after.', {
      param: 'ending_before',
    });
  }
  const cursorParam = endingBefore !== undefined ? 'ending_before' : 'starting_after';
  const cursor = endingBefore ?? startingAfter;
  let position: number | undefined;
  if (cursor !== undefined) {
    position = source.position(cursor);
    if (position === undefined) throw resourceMissing(source.resource, cursor, { param: cursorParam });
  }
  const direction = endingBefore !== undefined ? 'newer' : 'older';
  const found = source.seek({ position, direction, limit: limit + 1 });
  const data = found.slice(0, limit);
  return {
    object: 'list',
    url: source.url,
    data: direction === 'newer' ? data.reverse() : data,
    has_more: found.length > limit,
  };
}
