import type { FastifyReply } from 'fastify';

/** Pages kept per API instance; past this the oldest is dropped first. */
const MAX_PAGES = 1_000;

/**
 * Serialized answers, each kept with the version of the data it was read at. An answer is served
 * only while the data's version (read before the data, on every request) is still the one it was
 * read at; time alone never keeps one.
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

/** Sends JSON text as it is (a typed reply would take only the schema's object). */
export function sendJsonText(reply: FastifyReply, body: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(body);
}
