/**
 * Request validators and response serializers compiled on their route's first request instead of
 * at start (compiling them all took about 140 ms of every start, for routes most of which an
 * instance does not call in its first second). `compileAll` compiles what is still waiting: the
 * service runs it just after it starts listening, so a schema that cannot compile is reported at
 * start, and a test runs it over every route.
 */
export class DeferredCompilation {
  readonly #waiting = new Set<() => void>();

  /** A function that compiles with `compile` when first called (or by `compileAll`), then reuses it. */
  defer<T>(where: string, compile: () => T): () => T {
    let compiled: T | undefined;
    const get = (): T => {
      if (compiled === undefined) {
        try {
          compiled = compile();
        } catch (error) {
          throw new Error(`the schema of ${where} does not compile: ${(error as Error).message}`, {
            cause: error,
          });
        }
        this.#waiting.delete(warm);
      }
      return compiled;
    };
    const warm = () => void get();
    this.#waiting.add(warm);
    return get;
  }

  /**
   * Compiles everything still waiting, one schema per turn of the event loop so that requests
   * arriving meanwhile are not held up; the failures, each naming its route, in one error.
   */
  async compileAll(): Promise<void> {
    const failures: Error[] = [];
    for (const warm of [...this.#waiting]) {
      await new Promise((resolve) => setImmediate(resolve));
      try {
        warm();
      } catch (error) {
        failures.push(error as Error);
      }
    }
    if (failures.length > 0)
      throw new AggregateError(failures, failures.map((error) => error.message).join('; '));
  }
}
