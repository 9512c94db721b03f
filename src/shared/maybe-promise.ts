/**
 * A value now, or a promise of it: the answer of a step that usually answers from memory (a key
 * verified a moment ago, a counter in this process), where a promise each time would cost more
 * than the step itself.
 */
export type MaybePromise<T> = T | Promise<T>;

/** `next(value)` at once when `value` is there, else once its promise settles. */
export function andThen<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}
