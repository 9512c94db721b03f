import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Eta } from 'eta';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { escapeHtml } from '../shared/html.ts';
import type { Visit } from './session.ts';

const VIEWS = path.join(import.meta.dirname, 'views');
const ASSETS = path.join(import.meta.dirname, 'assets');

/** Eta escapes every `<%= %>` output by default; `<%~ %>` (unescaped) is used only for the layout's body. */
const eta = new Eta({ views: VIEWS, cache: true, autoEscape: true, autoTrim: false });

/**
 * App pages load scripts and styles only from the service itself: no inline script or style, no
 * other origin, forms post only here, and no page may be framed.
 */
export const APP_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  // The passkey script asks the service itself for a WebAuthn challenge.
  "connect-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Same-origin requests carry the referrer (and so a real `Origin` on form posts, which the
 * cross-site check needs); other origins get nothing, so an invitation URL never leaks.
 */
export const APP_REFERRER_POLICY = 'same-origin';

export interface Asset {
  body: Buffer;
  type: string;
  /** Content hash, appended to the asset's URL so it can be cached for long. */
  version: string;
}

/**
 * The browser half of SimpleWebAuthn, served from here like our own files (no CDN): its
 * self-contained UMD bundle, which defines `SimpleWebAuthnBrowser`. The package exports no
 * subpaths, so the bundle is found next to its entry point.
 */
const WEBAUTHN_BROWSER_BUNDLE = path.join(
  path.dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')),
  '..',
  'dist',
  'bundle',
  'index.umd.min.js',
);

function loadAsset(file: string, type: string, filePath = path.join(ASSETS, file)): Asset {
  const body = readFileSync(filePath);
  return { body, type, version: createHash('sha256').update(body).digest('hex').slice(0, 12) };
}

/** A Map, so a requested name such as `__proto__` or `constructor` is simply not found. */
export const ASSET_FILES: ReadonlyMap<string, Asset> = new Map([
  ['app.css', loadAsset('app.css', 'text/css; charset=utf-8')],
  ['app.js', loadAsset('app.js', 'text/javascript; charset=utf-8')],
  ['icon.svg', loadAsset('icon.svg', 'image/svg+xml')],
  ['passkeys.js', loadAsset('passkeys.js', 'text/javascript; charset=utf-8')],
  ['upload-progress.js', loadAsset('upload-progress.js', 'text/javascript; charset=utf-8')],
  [
    'simplewebauthn-browser.js',
    loadAsset('simplewebauthn-browser.js', 'text/javascript; charset=utf-8', WEBAUTHN_BROWSER_BUNDLE),
  ],
]);

function assetUrl(name: string): string {
  return `/assets/${name}?v=${ASSET_FILES.get(name)?.version ?? ''}`;
}

const dateTime = new Intl.DateTimeFormat('en-GB', {
  dateStyle: 'medium',
  timeStyle: 'short',
  timeZone: 'UTC',
});
const dateOnly = new Intl.DateTimeFormat('en-GB', { dateStyle: 'long', timeZone: 'UTC' });
const dollars = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

/** What every template can use besides its own data. */
const helpers = {
  assetUrl,
  dateTime: (value: Date) => `${dateTime.format(value)} UTC`,
  date: (value: Date) => dateOnly.format(value),
  iso: (value: Date) => value.toISOString(),
  money: (minorUnits: number) => dollars.format(minorUnits / 100),
  /** An email address, escaped, that wraps after its `@` and before its dots rather than mid-word (`<%~`). */
  address: (value: string) => escapeHtml(value).replace(/@/g, '@<wbr>').replace(/\./g, '<wbr>.'),
};

export type PageData = { title: string; errorCode?: string } & Record<string, unknown>;

/**
 * The data of each typed page, by view name: `views/<name>.view.ts` declares its page's type here
 * (declaration merging) beside the template, and `sendView` holds a route to it at type-check time.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by the views' declarations
export interface PageViews {}

/** Sends a typed page (see `PageViews`). */
export function sendView<V extends keyof PageViews & string>(
  request: FastifyRequest,
  reply: FastifyReply,
  view: V,
  data: PageViews[V] & PageBase,
  status = 200,
): FastifyReply {
  return sendPage(request, reply, view, asPageData(data), status);
}

type PageBase = { title: string; errorCode?: string | undefined };

function asPageData<T extends PageBase>(data: T): PageData {
  return { ...data };
}

/** The stable code an error page names in `<meta name="error-code">`, unless the page gives its own. */
const ERROR_CODES: Record<number, string> = {
  400: 'invalid_request',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'too_many_requests',
  500: 'internal_error',
};

export function renderPage(view: string, visit: Visit | undefined, data: PageData, status = 200): string {
  const errorCode = status >= 400 ? (data.errorCode ?? ERROR_CODES[status] ?? 'invalid_request') : undefined;
  return eta.render(`./${view}`, {
    ...data,
    errorCode,
    visit: visit ?? { user: null, csrfToken: '' },
    h: helpers,
  });
}

/**
 * Whether an external auditor reads the page, and until when: its forms and the nav's other pages
 * are then left out (the workspace scope refuses them anyway). False for everyone else.
 */
function auditorOf(request: FastifyRequest): false | { until: string } {
  const membership = request.workspaceAccess?.membership;
  if (membership?.role !== 'auditor' || !membership.accessUntil) return false;
  return { until: helpers.dateTime(membership.accessUntil) };
}

/** Sends a page with the app's security headers; never cached, since pages depend on who asks. */
export function sendPage(
  request: FastifyRequest,
  reply: FastifyReply,
  view: string,
  data: PageData,
  status = 200,
  formTargets: readonly string[] = [],
): FastifyReply {
  return sendHtml(
    reply,
    renderPage(view, request.visit, { auditor: auditorOf(request), ...data }, status),
    status,
    formTargets,
  );
}

/**
 * `formTargets`: other origins a form of this page ends up at. A form posted here that answers
 * with a redirect elsewhere (Billing's "Buy", to the provider's payment page) needs the target's
 * origin in `form-action`: browsers check it on every redirect of the submission.
 */
export function sendHtml(
  reply: FastifyReply,
  html: string,
  status: number,
  formTargets: readonly string[] = [],
): FastifyReply {
  const policy =
    formTargets.length === 0
      ? APP_CONTENT_SECURITY_POLICY
      : APP_CONTENT_SECURITY_POLICY.replace(
          "form-action 'self'",
          `form-action 'self' ${formTargets.join(' ')}`,
        );
  return reply
    .code(status)
    .header('content-security-policy', policy)
    .header('cache-control', 'no-store')
    .header('referrer-policy', APP_REFERRER_POLICY)
    .type('text/html; charset=utf-8')
    .send(html);
}

export function sendNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendPage(request, reply, 'not-found', { title: 'Page not found' }, 404);
}

export function sendForbidden(request: FastifyRequest, reply: FastifyReply, message: string): FastifyReply {
  return sendPage(request, reply, 'error', { title: 'Not allowed', heading: 'Not allowed', message }, 403);
}
