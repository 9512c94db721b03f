import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify';

/** No request of ours nests anywhere near this deep; deeper input only costs recursion downstream. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether a parsed body stays within what every later step can handle: each number finite (JSON
 * allows `1e400`, which parses as Infinity and has no canonical form) and nesting at most
 * MAX_JSON_DEPTH (canonicalization and validation walk the body recursively).
 */
function withinBounds(value: unknown): boolean {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [current, depth] = next;
    if (typeof current === 'number' && !Number.isFinite(current)) return false;
    if (current === null || typeof current !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) return false;
    for (const member of Object.values(current)) pending.push([member, depth + 1]);
  }
  return true;
}

/**
 * The `application/json` parser of a scope: Fastify's own (which refuses `__proto__` and
 * `constructor.prototype`), then the bounds above; a body past them is the same 400 as broken
 * JSON, in whatever error format the scope answers with. With `emptyIsNone`, an empty body counts
 * as no body (agents send the content type on bodiless POSTs too).
 */
export function useBoundedJsonParser(scope: FastifyInstance, options: { emptyIsNone: boolean }): void {
  const parse = scope.getDefaultJsonParser('error', 'error');
  if (scope.hasContentTypeParser('application/json')) scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body);
    rawBodies.set(request, bytes);
    const text = bytes.toString('utf8');
    if (text === '' && options.emptyIsNone) return done(null, undefined);
    parse(request, text, (error, value) => {
      if (error) done(error, undefined);
      else if (!withinBounds(value)) done(new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(), undefined);
      else done(null, value);
    });
  });
}

const rawBodies = new WeakMap<FastifyRequest, Buffer>();

/** The body bytes exactly as received (what a Content-Digest covers); undefined without a JSON body. */
export function rawBodyOf(request: FastifyRequest): Buffer | undefined {
  return rawBodies.get(request);
}
