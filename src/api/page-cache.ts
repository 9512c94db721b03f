/** Pages kept per API instance; past this the oldest is dropped first. */
const MAX_PAGES = 1_000;

/**
 * Serialized list pages, each kept with the version of the data it was read at. A page is served
 * only while the data's version (read from the database on every request, so a write through any
 * instance is seen) is still the one it was read at; time alone never keeps a page.
 */
export class PageCache {
  readonly #pages = new Map<string, { version: number; body: string }>();

  /** The page kept for `key` if it was read at `version`. */
  get(key: string, version: number): string | undefined {
    const page = this.#pages.get(key);
    return page?.version === version ? page.body : undefined;
  }

  /** Keeps `body`, read after the data stood at `version`. */
  set(key: string, version: number, body: string): void {
    this.#pages.delete(key);
    if (this.#pages.size >= MAX_PAGES) {
      const oldest = this.#pages.keys().next();
      if (!oldest.done) this.#pages.delete(oldest.value);
    }
    this.#pages.set(key, { version, body });
  }
}
