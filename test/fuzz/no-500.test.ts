// db-scope: both

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { encodeCursor } from '../../src/db/cursor.ts';
import { createStripeAdapter } from '../../src/psp/index.ts';
import { startPspSandbox } from '../../src/psp/sandbox/main.ts';
import { ManualClock } from '../../src/shared/clock.ts';
import { createOrganizationIn } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';
import { challengeParams } from '../helpers/mpp.ts';
import { API_VERSION, mintToken, SANDBOX_KEY } from '../helpers/purchase.ts';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.ts';
import { acceptAsNewAccount, signedInOwner, startAppFixture, webClient } from '../helpers/web.ts';
import {
  HOSTILE_CONTENT_TYPES,
  HOSTILE_CURSOR_POSITIONS,
  HOSTILE_FORM_VALUES,
  HOSTILE_HEADERS,
  HOSTILE_PATH_VALUES,
  HOSTILE_QUERIES,
  HOSTILE_REDIRECTS,
  HOSTILE_URL_CHANGES,
  HOSTILE_VALUES,
  hostileBodies,
  hostileCredentials,
  multipartShapes,
  OTHER_METHODS,
} from './corpus.ts';
import { fillPattern, parameterPrefixes, type Route, routesOf } from './routes.ts';

/** Change the seed to explore other combinations; a failure prints the seed that found it. */
const SEED = Number(process.env.FUZZ_SEED ?? 20_260_301);
/**
 * How many of each kind of hostile input every route gets (all multipart shapes go to the upload);
 * `FUZZ_SCALE` multiplies them for a longer exploratory run.
 */
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);
const PER_ROUTE = Object.fromEntries(
  Object.entries({
    values: 10,
    bodies: 4,
    contentTypes: 2,
    headers: 4,
    queries: 5,
    urls: 2,
    methods: 1,
    cursors: 2,
  }).map(([kind, count]) => [kind, Math.ceil(count * SCALE)]),
) as Record<
  'values' | 'bodies' | 'contentTypes' | 'headers' | 'queries' | 'cursors' | 'urls' | 'methods',
  number
>;

const UCP_AGENT = 'profile="https://agent.example/.well-known/ucp"; version="2026-08-25"';
const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

type Surface = 'acp' | 'ucp' | 'mpp' | 'rest' | 'other';

function surfaceOf(url: string): Surface {
  if (url.startsWith('/api/acp/')) return 'acp';
  if (url.startsWith('/api/ucp/')) return 'ucp';
  if (url.startsWith('/api/mpp/')) return 'mpp';
  if (url.startsWith('/api/v1/')) return 'rest';
  return 'other';
}

/**
 * The stable code of an error answer in its surface's format: `code` (ACP, problem+json), the first
 * message's `code` (UCP), `error` (OAuth, RFC 6749 5.2), the problem type of an MPP payment problem,
 * or the app's error page's `<meta name="error-code">`.
 */
function errorCodeOf(text: string): string | undefined {
  if (/^<!doctype html>/i.test(text)) return /<meta name="error-code" content="([a-z_]+)">/.exec(text)?.[1];
  try {
    const body = JSON.parse(text);
    const code = body?.code ?? body?.messages?.[0]?.code ?? body?.error;
    if (typeof code === 'string') return code;
    return typeof body?.type === 'string' && body.type.startsWith('https://paymentauth.org/problems/')
      ? body.type
      : undefined;
  } catch {
    return undefined;
  }
}

/** A small deterministic generator (mulberry32), so every run sends the same requests. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

interface FuzzRequest {
  route: Route;
  kind: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
}

/** A JSON value's paths: every member and element, containers included. */
function pathsOf(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [at];
  const members = Object.entries(value).map(([key]) => (Array.isArray(value) ? Number(key) : key));
  return [at, ...members.flatMap((key) => pathsOf((value as Record<string, unknown>)[key], [...at, key]))];
}

/** The JSON text of `template` with the value at `at` replaced by the raw JSON text `raw`. */
function replacedAt(template: unknown, at: (string | number)[], raw: string): string {
  const marker = '\u0001fuzz-marker\u0001';
  if (at.length === 0) return raw;
  const copy = structuredClone(template) as Record<string | number, unknown>;
  let parent = copy;
  for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  parent[at[at.length - 1] as string | number] = marker;
  return JSON.stringify(copy).replace(JSON.stringify(marker), raw);
}

/** `count` items of `list`, continuing where the previous route left off, so all are used. */
function rotation<T>(list: readonly T[]): (count: number) => T[] {
  let next = 0;
  return (count) =>
    Array.from({ length: Math.min(count, list.length) }, () => list[next++ % list.length] as T);
}

interface Service {
  runtime: TestRuntime;
  /** A valid body for each route that takes one, keyed by `METHOD pattern`. */
  templates: Map<string, unknown>;
  /** Headers that get a request of each surface past authentication and its protocol's checks. */
  baseHeaders: Record<Surface, Record<string, string>>;
  /** A real value for each path parameter, keyed by the pattern up to and including it. */
  realParameters: Map<string, string>;
  workspaceId: string;
  /** For each MPP route, the parameters of a challenge it issued, to echo in hostile credentials. */
  challenges: Map<string, Record<string, string>>;
  /** A token the PSP sandbox will charge, for one genuine MPP payment. */
  token: string;
}

async function startService(t: import('node:test').TestContext): Promise<Service> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'svc-fuzz-'));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  const sandbox = await startPspSandbox({ secretKey: SANDBOX_KEY, now: () => clock.now() });
  t.after(() => sandbox.close());
  const runtime = await startTestRuntime(t, {
    clock,
    env: {
      DATA_DIR: dataDir,
      EVIDENCE_MAX_BYTES: '65536',
      RATE_LIMIT_MAX: '1000000',
      API_RATE_LIMIT_PER_IP: '1000000',
      API_RATE_LIMIT_PER_KEY: '1000000',
    },
    paymentProvider: createStripeAdapter({
      secretKey: SANDBOX_KEY,
      webhookSecret: 'whsec_sandbox',
      apiBase: new URL(sandbox.url),
      apiVersion: API_VERSION,
      maxNetworkRetries: 0,
    }),
    // Webhook targets resolve to a public address without asking DNS (the tests have no network).
    webhooks: { resolveHost: async () => ['93.184.215.14'] },
  });
  const org = await createOrganizationIn(runtime);
  const baseHeaders: Service['baseHeaders'] = {
    acp: { 'api-version': '2026-04-17' },
    ucp: { 'ucp-agent': UCP_AGENT },
    mpp: {},
    rest: { authorization: `Bearer ${org.key}` },
    other: {},
  };
  const token = await mintToken(sandbox.url, runtime.clock);
  const buyer = { email: 'buyer@example.com', first_name: 'Ada', last_name: 'Agent' };
  const acpItem = { line_items: [{ id: 'svc-pro-monthly', quantity: 1 }], currency: 'usd', buyer };
  const ucpItem = { line_items: [{ item: { id: 'svc-pro-monthly' }, quantity: 1 }], buyer };
  const templates = new Map<string, unknown>([
    ['POST /api/acp/checkout_sessions', acpItem],
    ['POST /api/acp/checkout_sessions/:id', { line_items: [{ id: 'svc-pro-annual' }], buyer }],
    [
      'POST /api/acp/checkout_sessions/:id/complete',
      {
        payment_data: {
          handler_id: 'psp_spt',
          instrument: { type: 'card', credential: { type: 'spt', token } },
          billing_address: { country: 'US' },
        },
      },
    ],
    ['POST /api/acp/checkout_sessions/:id/cancel', {}],
    ['POST /api/ucp/v1/checkout-sessions', ucpItem],
    ['PUT /api/ucp/v1/checkout-sessions/:id', ucpItem],
    [
      'POST /api/ucp/v1/checkout-sessions/:id/complete',
      {
        payment: {
          instruments: [
            {
              id: 'card-1',
              handler_id: 'psp_payments',
              type: 'card',
              selected: true,
              credential: { type: 'psp_payment_token', token },
            },
          ],
        },
      },
    ],
    ['POST /api/ucp/v1/checkout-sessions/:id/cancel', {}],
  ]);
  await runtime.app.ready();
  const routes = routesOf(runtime.app);
  for (const route of routes.filter((candidate) => candidate.url.startsWith('/api/mpp/plans/'))) {
    templates.set(`POST ${route.url}`, { buyer: { ...buyer, company: { name: 'Acme' } } });
  }
  // The REST API's own examples, from its OpenAPI document: a new operation brings its own.
  const document = (await runtime.app.inject('/api/v1/openapi.json')).json();
  for (const [pattern, item] of Object.entries<Record<string, { requestBody?: { content: object } }>>(
    document.paths,
  )) {
    for (const [method, operation] of Object.entries(item)) {
      // biome-ignore lint/suspicious/noExplicitAny: the document's schemas are plain JSON
      const media = (operation.requestBody?.content as any)?.['application/json'];
      let schema = media?.schema;
      if (schema?.$ref) schema = document.components.schemas[schema.$ref.split('/').pop()];
      const example = schema?.examples?.[0];
      if (example !== undefined)
        templates.set(`${method.toUpperCase()} ${pattern.replace(/\{(\w+)\}/g, ':$1')}`, example);
    }
  }

  const realParameters = await findRealParameters(runtime, routes, templates, baseHeaders);
  const challenges = new Map<string, Record<string, string>>();
  for (const route of routes.filter((candidate) => candidate.url.startsWith('/api/mpp/plans/'))) {
    if (route.method !== 'POST') continue;
    const challenged = await runtime.app.inject({
      method: 'POST',
      url: route.url,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ buyer }),
    });
    challenges.set(route.url, challengeParams(String(challenged.headers['www-authenticate'])));
  }
  return {
    runtime,
    templates,
    baseHeaders,
    realParameters,
    workspaceId: org.workspaceId,
    challenges,
    token: await mintToken(sandbox.url, runtime.clock),
  };
}

/**
 * A real value for each parameter, found the way a client would: the first item of the list at
 * the pattern's prefix, or the id of what its template creates there.
 */
async function findRealParameters(
  runtime: TestRuntime,
  routes: Route[],
  templates: Map<string, unknown>,
  baseHeaders: Service['baseHeaders'],
): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  const prefixes = [
    ...new Set(
      routes.flatMap((route) =>
        [...route.url.matchAll(/:\w+/g)].map((match) =>
          route.url.slice(0, (match.index ?? 0) + match[0].length),
        ),
      ),
    ),
  ].sort((a, b) => a.length - b.length);
  for (const prefix of prefixes) {
    const collection = prefix.slice(0, prefix.lastIndexOf('/'));
    const url = fillPattern(collection, (upTo) => found.get(upTo) ?? 'x');
    const headers = { ...baseHeaders[surfaceOf(collection)], 'idempotency-key': `setup-${prefix}` };
    if (collection.endsWith('/hooks/:id/deliveries')) {
      await runtime.app.inject({
        method: 'POST',
        url: `${url.slice(0, -'/deliveries'.length)}/test`,
        headers,
      });
    }
    const listed = await runtime.app.inject({ method: 'GET', url, headers });
    let id = listed.statusCode === 200 ? listed.json()?.data?.[0]?.id : undefined;
    const template = templates.get(`POST ${collection}`);
    if (id === undefined && template !== undefined) {
      const created = await runtime.app.inject({
        method: 'POST',
        url,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(template),
      });
      id = created.json()?.id;
    }
    if (typeof id === 'string') found.set(prefix, id);
  }
  return found;
}

/** Every request of the run, in a fixed order; deletions and cancellations last so the rest find their records. */
function buildRequests(service: Service): FuzzRequest[] {
  const next = random(SEED);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const values = rotation(HOSTILE_VALUES);
  const bodies = rotation(hostileBodies(service.runtime.config.bodyLimitBytes));
  const contentTypes = rotation(HOSTILE_CONTENT_TYPES);
  const headerSets = rotation(HOSTILE_HEADERS);
  const pathValues = rotation(HOSTILE_PATH_VALUES);
  const queries = rotation(HOSTILE_QUERIES);
  const cursorPositions = rotation(HOSTILE_CURSOR_POSITIONS);
  const urlChanges = rotation(HOSTILE_URL_CHANGES);
  const otherMethods = rotation(OTHER_METHODS);
  const shapes = multipartShapes();
  const requests: FuzzRequest[] = [];
  let sequence = 0;

  const routes = routesOf(service.runtime.app).sort(
    (a, b) =>
      Number(a.method === 'DELETE' || a.url.endsWith('/cancel')) -
      Number(b.method === 'DELETE' || b.url.endsWith('/cancel')),
  );
  for (const route of routes) {
    const surface = surfaceOf(route.url);
    const template = service.templates.get(`${route.method} ${route.url}`);
    const takesBody = BODY_METHODS.has(route.method);
    const realValue = (upTo: string) => service.realParameters.get(upTo) ?? 'x';
    const realUrl = fillPattern(route.url, realValue);
    const add = (kind: string, changes: Partial<FuzzRequest> = {}) => {
      sequence++;
      const json = takesBody ? JSON.stringify(template ?? {}) : undefined;
      requests.push({
        route,
        kind,
        method: route.method,
        url: realUrl,
        payload: json,
        ...changes,
        headers: {
          ...service.baseHeaders[surface],
          'idempotency-key': `fuzz-${SEED}-${sequence}`,
          ...(takesBody ? { 'content-type': 'application/json' } : {}),
          ...changes.headers,
        },
      });
    };

    add('valid');
    // HEAD runs the GET handler: its own framing is what needs a look, not all the input again.
    if (route.method === 'HEAD') {
      for (const headers of headerSets(1)) add('header', { headers });
      for (const value of pathValues(parameterPrefixes(route.url).length > 0 ? 2 : 0))
        add('path', {
          url: fillPattern(route.url, (upTo, index) => (index === 0 ? value : realValue(upTo))),
        });
      continue;
    }
    if (takesBody) {
      const paths = pathsOf(template ?? {});
      for (const value of values(PER_ROUTE.values))
        add('value', { payload: replacedAt(template ?? {}, pick(paths), value) });
      add('value', { payload: replacedAt(template ?? {}, [], pick(HOSTILE_VALUES)) });
      add('extra member', {
        payload: replacedAt({ ...(template as object), fuzz: 0 }, ['fuzz'], pick(HOSTILE_VALUES)),
      });
      for (const contentType of contentTypes(PER_ROUTE.contentTypes))
        add('content type', { headers: { 'content-type': contentType } });
      add('no content type', { headers: { 'content-type': '' } });
    }
    for (const body of bodies(takesBody ? PER_ROUTE.bodies : 1))
      add('body', { payload: body, headers: { 'content-type': 'application/json' } });
    for (const headers of headerSets(PER_ROUTE.headers)) add('header', { headers });
    for (const hostile of parameterPrefixes(route.url).keys()) {
      for (const value of HOSTILE_PATH_VALUES) {
        add('path', {
          url: fillPattern(route.url, (upTo, index) => (index === hostile ? value : realValue(upTo))),
        });
      }
    }
    for (const query of queries(PER_ROUTE.queries)) add('query', { url: `${realUrl}?${query}` });
    for (const change of urlChanges(PER_ROUTE.urls)) add('url', { url: change(realUrl) });
    const registered = new Set(
      routes.filter((other) => other.url === route.url).map((other) => other.method),
    );
    for (const method of otherMethods(PER_ROUTE.methods).filter((other) => !registered.has(other)))
      add('method', { method });
    if (route.method === 'GET') {
      const list = route.url.slice(route.url.lastIndexOf('/') + 1);
      const positions =
        parameterPrefixes(route.url).length === 0
          ? HOSTILE_CURSOR_POSITIONS
          : cursorPositions(PER_ROUTE.cursors);
      for (const position of positions) {
        const cursor = encodeCursor(position as (string | number)[], {
          workspaceId: service.workspaceId,
          list,
          filter: {},
        });
        add('cursor', { url: `${realUrl}?cursor=${encodeURIComponent(cursor)}` });
      }
    }
    const challenge = service.challenges.get(route.url);
    if (challenge && route.method === 'POST') {
      const credentials = hostileCredentials(challenge);
      if (route.url.endsWith('/svc-starter-monthly'))
        credentials.unshift(JSON.stringify({ challenge, payload: { spt: service.token } }));
      for (const credential of credentials)
        add('payment credential', {
          headers: { authorization: `Payment ${Buffer.from(credential).toString('base64url')}` },
        });
    }
    if (takesBody) {
      const forms =
        route.method === 'POST' && route.url === '/api/v1/evidence' ? shapes : [pick(shapes), pick(shapes)];
      for (const shape of forms)
        add(`multipart: ${shape.name}`, {
          payload: shape.body,
          headers: { 'content-type': shape.contentType },
        });
    }
  }
  return requests;
}

describe(`hostile input on every route on ${testDialect}`, () => {
  it('is never answered with a 500, and every refusal carries a stable code', async (t) => {
    const service = await startService(t);
    const requests = buildRequests(service);
    const routes = new Set(requests.map((request) => `${request.route.method} ${request.route.url}`));
    for (const expected of [
      'POST /api/acp/checkout_sessions/:id/complete',
      'PUT /api/ucp/v1/checkout-sessions/:id',
      'POST /api/mpp/plans/svc-pro-monthly',
      'POST /api/v1/evidence',
      'GET /api/v1/hooks/:id/deliveries',
      'GET /healthz',
      'GET /.well-known/ucp',
      'GET /dev/mailbox',
    ])
      assert.ok(routes.has(expected), `the route list from the app has ${expected}`);

    for (const prefix of [
      '/api/acp/checkout_sessions/:id',
      '/api/v1/tasks/:id',
      '/api/v1/hooks/:id/deliveries/:delivery_id',
    ])
      assert.ok(
        service.realParameters.has(prefix),
        `a real value for ${prefix}, so requests reach past the lookup`,
      );

    const statuses = new Map<number, number>();
    const failures: string[] = [];
    const started = performance.now();
    for (const request of requests) {
      const response = await service.runtime.app.inject({
        method: request.method as 'GET',
        url: request.url,
        headers: request.headers,
        ...(request.payload === undefined ? {} : { payload: request.payload }),
      });
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      const refusedWithoutCode =
        response.statusCode >= 400 &&
        response.statusCode < 500 &&
        request.method !== 'HEAD' &&
        errorCodeOf(response.body) === undefined;
      if ((response.statusCode >= 500 && response.statusCode !== 503) || refusedWithoutCode) {
        const sent = typeof request.payload === 'string' ? request.payload.slice(0, 200) : '(bytes)';
        failures.push(
          `${response.statusCode} ${request.method} ${request.route.url} [${request.kind}] ${request.url.slice(0, 120)} ` +
            `${JSON.stringify(request.headers).slice(0, 300)} ${sent} -> ${response.body.slice(0, 200)}`,
        );
      }
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const seen = [...statuses].sort(([a], [b]) => a - b).map(([status, count]) => `${status}: ${count}`);
    t.diagnostic(
      `seed ${SEED}: ${requests.length} requests to ${routes.size} routes in ${seconds} s; statuses ${seen.join(', ')}`,
    );
    assert.deepEqual(failures, [], `seed ${SEED}`);
  });
});

describe(`hostile return addresses on ${testDialect}`, () => {
  it('never sends a person off the site after signing in or out', async (t) => {
    const fixture = await startAppFixture(t);
    const { invitationPath } = await fixture.provision({ email: 'owner@example.com' });
    const password = 'correct horse battery staple';
    const signedIn = await acceptAsNewAccount(fixture.runtime.app, invitationPath, password);
    const origin = 'http://svc.test';
    const failures: string[] = [];
    const check = (answer: { status: number; location?: string }, how: string, next: string) => {
      if (answer.status !== 303 || answer.location === undefined) {
        failures.push(`${how} ${JSON.stringify(next)}: ${answer.status}, no redirect`);
        return;
      }
      const target = new URL(answer.location, `${origin}/w/x/`);
      if (target.origin !== origin || !answer.location.startsWith('/') || answer.location.startsWith('//'))
        failures.push(`${how} ${JSON.stringify(next)} -> ${answer.location}`);
    };
    for (const next of HOSTILE_REDIRECTS) {
      check(await signedIn.get(`/sign-in?next=${encodeURIComponent(next)}`), 'GET /sign-in', next);
      const guest = webClient(fixture.runtime.app);
      await guest.get('/sign-in');
      check(
        await guest.post('/sign-in', { email: 'owner@example.com', password, next }),
        'POST /sign-in',
        next,
      );
      // The signed-in session has a token of its own: read it from a page before signing out.
      await guest.get('/legal/terms');
      check(await guest.post('/sign-out', { next }), 'POST /sign-out', next);
    }
    assert.deepEqual(failures, []);
  });
});

/** The forms of a page: where each posts and the names of its fields. */
function formsOf(html: string): { action: string; fields: string[] }[] {
  return [...html.matchAll(/<form\b[^>]*method="post"[^>]*>([\s\S]*?)<\/form>/g)].flatMap((match) => {
    const action = /action="([^"]+)"/.exec(match[0])?.[1]?.replaceAll('&amp;', '&');
    if (!action) return [];
    const names = [...(match[1] ?? '').matchAll(/\bname="([^"]+)"/g)].map((name) => name[1] ?? '');
    return [{ action, fields: [...new Set(names)].filter((name) => name !== '_csrf') }];
  });
}

describe(`hostile input to the workspace pages, signed in, on ${testDialect}`, () => {
  it('answers every form and list of the app with a page or a redirect, never a 500', async (t) => {
    const owner = await signedInOwner(t);
    const { client, page } = owner;
    const person = (await owner.api('POST', '/people', { email: 'ada@example.com', name: 'Ada' })).body;
    const control = (await owner.api('GET', '/controls?q=A.5.15')).body.data[0];
    const made = {
      task: (await owner.api('POST', '/tasks', { title: 'A task', assignee_id: person.id })).body,
      risk: (await owner.api('POST', '/risks', { title: 'A risk', likelihood: 3, impact: 4 })).body,
      vendor: (await owner.api('POST', '/vendors', { name: 'A vendor' })).body,
      policy: (await owner.api('POST', '/policies', { key: 'access', title: 'Access', body: '# Hi' })).body,
      evidence: (await owner.api('POST', '/evidence', { title: 'A link', url: 'https://example.com/x' }))
        .body,
    };
    const pages = [
      '',
      '/controls',
      `/controls/${control.reference}`,
      '/tasks',
      '/tasks/new',
      `/tasks/${made.task.id}`,
      '/evidence',
      '/evidence/new',
      `/evidence/${made.evidence.id}`,
      '/risks',
      '/risks/new',
      `/risks/${made.risk.id}`,
      '/vendors',
      '/vendors/new',
      `/vendors/${made.vendor.id}`,
      '/people',
      '/people/new',
      '/people/import',
      `/people/${person.id}`,
      '/policies',
      '/policies/new',
      `/policies/${made.policy.id}`,
      '/settings',
    ];
    let seed = SEED;
    const pick = <T>(list: readonly T[]): T => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return list[seed % list.length] as T;
    };
    const failures: string[] = [];
    let sent = 0;
    const check = (what: string, status: number, body: string) => {
      sent++;
      if (status >= 500) failures.push(`${status} ${what}: ${body.slice(0, 200)}`);
    };
    const forms = new Map<string, string[]>();
    for (const path of pages) {
      const shown = await client.get(`${page}${path}`);
      check(`GET ${path}`, shown.status, shown.body);
      for (const form of formsOf(shown.body))
        if (!form.action.endsWith('/sign-out')) forms.set(form.action, form.fields);
      for (const query of [
        'status=nope',
        'q=%00',
        `q=${'x'.repeat(300)}`,
        'cursor=%ff',
        'show=a&show=b',
        'owner_id=per_x',
        'likelihood=9',
        'since=2026-13-01',
      ])
        check(`GET ${path}?${query}`, (await client.get(`${page}${path}?${query}`)).status, '');
    }
    assert.ok(forms.size >= 15, `forms found: ${[...forms.keys()].join(' ')}`);
    const deleting = (action: string) => /\/(delete|remove|leave)$/.test(action);
    const ordered = [...forms].sort(([a], [b]) => Number(deleting(a)) - Number(deleting(b)));
    for (const [action, fields] of ordered) {
      const variants: Record<string, string | string[]>[] = [
        {},
        Object.fromEntries(fields.map((name) => [name, pick(HOSTILE_FORM_VALUES)])),
        Object.fromEntries(fields.map((name) => [name, pick(HOSTILE_FORM_VALUES)])),
        Object.fromEntries(
          fields.map((name) => [name, [pick(HOSTILE_FORM_VALUES), pick(HOSTILE_FORM_VALUES)]]),
        ),
      ];
      for (const form of variants) {
        await client.get(`${page}/settings`);
        const answer = await client.post(action, form);
        check(`POST ${action} ${JSON.stringify(form).slice(0, 150)}`, answer.status, answer.body);
      }
    }
    t.diagnostic(`${sent} requests to ${pages.length} pages and ${forms.size} forms`);
    assert.deepEqual(failures, []);
  });
});
