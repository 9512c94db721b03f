import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isStorableText } from '../shared/text.ts';
import { isMachinePath } from './machine-paths.ts';

/** Form posts are small: names, addresses, passwords. */
const FORM_BODY_LIMIT_BYTES = 16 * 1024;

/** A field sent once is a string; a name sent several times (checkboxes) holds every value in order. */
export type FormBody = Record<string, string | string[]>;

/**
 * Pages post `application/x-www-form-urlencoded` and nothing else: JSON and other bodies are
 * refused (415) in the web scope, so the app's forms are not a second JSON API.
 */
export function acceptFormBodies(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT_BYTES },
    (_request, body, done) => {
      const fields: FormBody = Object.create(null);
      for (const [name, value] of new URLSearchParams(body as string)) {
        const earlier = fields[name];
        if (earlier === undefined) fields[name] = value;
        else if (typeof earlier === 'string') fields[name] = [earlier, value];
        else earlier.push(value);
      }
      done(null, fields);
    },
  );
}

/** One text field of the posted form; '' when absent or sent more than once. */
export function field(request: FastifyRequest, name: string): string {
  const body = request.body as FormBody | undefined;
  const value = body?.[name];
  return typeof value === 'string' ? value : '';
}

/** Every value sent under one name (a group of checkboxes); [] when absent. */
export function fieldValues(request: FastifyRequest, name: string): string[] {
  const body = request.body as FormBody | undefined;
  const value = body?.[name];
  if (value === undefined) return [];
  return typeof value === 'string' ? [value] : value;
}

/** An id taken from a URL, in the bounds the REST API accepts (1 to 64 storable characters). */
export function isIdInput(value: string): boolean {
  return value.length > 0 && value.length <= 64 && isStorableText(value);
}

/** Whether a field's text can be stored as given (no NUL, no unpaired surrogate). */
export function isStorable(value: string): boolean {
  return isStorableText(value);
}

export const DIRECTION_CONTROLS_REFUSED =
  'Leave out text-direction control characters (U+202A to U+202E, U+2066 to U+2069): they make a name show as another.';

/** Controls that reorder the text around them (embeddings, overrides, isolates). */
const DIRECTION_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/u;

/**
 * A name people read in lists and confirmations (an API key's, a passkey's): storable, and without
 * direction controls, with which "\u202eevil" shows as "live" and one name can pose as another.
 */
export function isDisplayName(value: string): boolean {
  return isStorable(value) && !DIRECTION_CONTROLS.test(value);
}

/** Long enough for an OAuth authorization request (a client's metadata URL, PKCE challenge, state). */
const NEXT_MAX_LENGTH = 4096;

/** Any origin will do as the base: only whether the resolved URL keeps it matters. */
const NEXT_BASE = 'http://app.invalid';

/**
 * Where to go after signing in or out: a page of this site, judged on the URL a browser would
 * resolve it to, since dot segments (`/w/../..//evil.example`, `/%2e%2e//evil.example`) turn a
 * path that starts well into `//evil.example`, which browsers read as another host. Anything that
 * leaves the origin, resolves to a network-path (`//`), holds a backslash or a control character,
 * or names a machine surface (`/api/...`) is the default; so is a repeated `next` (an array).
 */
export function safeNextPath(next: unknown, fallback: string): string {
  if (typeof next !== 'string' || !next.startsWith('/') || next.length > NEXT_MAX_LENGTH) return fallback;
  if (!isPlainPathText(next)) return fallback;
  let resolved: URL;
  try {
    resolved = new URL(next, NEXT_BASE);
  } catch {
    return fallback;
  }
  const target = `${resolved.pathname}${resolved.search}`;
  if (resolved.origin !== NEXT_BASE || !isPlainPathText(target) || isMachinePath(resolved.pathname)) {
    return fallback;
  }
  return target;
}

/** A path a browser cannot read as another host: one leading slash, no backslash, no control. */
function isPlainPathText(path: string): boolean {
  if (!path.startsWith('/') || path.startsWith('//')) return false;
  return ![...path].some((ch) => ch === '\\' || ch < ' ' || ch === '\u007f');
}
