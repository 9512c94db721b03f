// db-scope: both

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import vm from 'node:vm';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { EVENT_TYPE_NAMES } from '../../src/webhooks/index.ts';
import { startApiFixture } from '../helpers/api.ts';
import { testDialect } from '../helpers/database.ts';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/**
 * The routes Fastify serves under /api/v1, from its route tree. The interactive reference page
 * (/api/v1/docs and its assets) is HTML for people, not an API operation, so it is left out.
 */
function servedOperations(tree: string): Set<string> {
  const operations = new Set<string>();
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│ ├└─]*)(\S.*?) \(([A-Z, ]+)\)$/.exec(line);
    if (!match) continue;
    const [, indent = '', segment = '', methods = ''] = match;
    const depth = indent.length / 4 - 1;
    stack.length = depth;
    const path = `${stack[depth - 1] ?? ''}${segment}`;
    stack.push(path);
    if (!path.startsWith('/api/v1/') || path.startsWith('/api/v1/docs')) continue;
    for (const method of methods.split(', ')) {
      if (method !== 'HEAD') operations.add(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
    }
  }
  return operations;
}

/** The parts of the document the example and header checks read. */
interface DocumentSchema {
  type?: string;
  $ref?: string;
  properties?: Record<string, unknown>;
  examples?: Record<string, unknown>[];
}
interface Operation {
  security?: unknown[];
  requestBody?: { content: Record<string, { schema: DocumentSchema }> };
  responses: Record<string, { headers?: Record<string, { $ref?: string }> }>;
}

async function fetchDocument(t: Parameters<typeof startApiFixture>[0]) {
  const api = await startApiFixture(t);
  const response = await api.call('GET', '/openapi.json', { key: null });
  assert.equal(response.status, 200);
  return { api, document: response.body };
}

describe(`the REST API's OpenAPI document on ${testDialect}`, () => {
  it('is a valid OpenAPI 3.1 document, served without a key', async (t) => {
    const { document } = await fetchDocument(t);
    assert.equal(document.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(document);
    assert.ok(result.valid, JSON.stringify(result.errors, null, 1));
    assert.doesNotThrow(() => validator.resolveRefs(), 'every $ref resolves');
  });

  it('names every served route and no route that is not served', async (t) => {
    const { api, document } = await fetchDocument(t);
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(item))
        if (METHODS.includes(method)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    const served = servedOperations(api.runtime.app.printRoutes({ commonPrefix: false }));
    assert.ok(served.size >= 10, 'the route tree was read');
    assert.deepEqual([...served].filter((op) => !documented.has(op)).sort(), [], 'served but not documented');
    assert.deepEqual([...documented].filter((op) => !served.has(op)).sort(), [], 'documented but not served');
    assert.ok(documented.has('GET /api/v1/controls') && documented.has('DELETE /api/v1/tasks/{id}'));
  });

  it('gives every operation an id, a summary, both key schemes and its error answers', async (t) => {
    const { document } = await fetchDocument(t);
    assert.deepEqual(document.security, [{ bearerAuth: [] }, { apiKeyHeader: [] }]);
    assert.deepEqual(Object.keys(document.components.securitySchemes).sort(), ['apiKeyHeader', 'bearerAuth']);
    const ids = new Set<string>();
    // biome-ignore lint/suspicious/noExplicitAny: walking an OpenAPI document
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method} ${path}`;
        assert.ok(operation.operationId && !ids.has(operation.operationId), `${name}: unique operationId`);
        ids.add(operation.operationId);
        assert.ok(operation.summary, `${name}: summary`);
        // The document, and the evidence package's download link (its token is the credential).
        const isPublic =
          path === '/api/v1/openapi.json' || path === '/api/v1/evidence-package-downloads/{token}';
        assert.equal(operation.security?.length === 0, isPublic, `${name}: security`);
        if (!isPublic) {
          // Every body may be refused as too large or of a type not taken (answered in test/http).
          const statuses = ['400', '401', '429', ...(operation.requestBody ? ['413', '415'] : [])];
          for (const status of statuses) {
            assert.equal(
              operation.responses[status]?.content?.['application/problem+json']?.schema?.$ref,
              '#/components/schemas/Problem',
              `${name}: ${status}`,
            );
          }
        }
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in === 'path')
            assert.ok(path.includes(`{${parameter.name}}`), `${name}: ${parameter.name}`);
        }
      }
    }
  });

  it('documents the CSV export of every list beside its JSON page', async (t) => {
    const { document } = await fetchDocument(t);
    const lists: string[] = [];
    // biome-ignore lint/suspicious/noExplicitAny: walking an OpenAPI document
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, any>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const content = operation.responses['200']?.content ?? {};
        const isList = content['application/json']?.schema?.properties?.next_cursor !== undefined;
        assert.equal(content['text/csv'] !== undefined, isList, `${method} ${path}: text/csv`);
        if (!isList) continue;
        assert.equal(content['text/csv'].schema.type, 'string');
        lists.push(operation.operationId);
      }
    }
    for (const list of ['listTasks', 'listControls', 'listRisks', 'listAuditEvents', 'listHookDeliveries'])
      assert.ok(lists.includes(list), list);
  });

  it('documents every event type under webhooks, with valid JSON Schemas throughout', async (t) => {
    const { document } = await fetchDocument(t);
    assert.deepEqual(Object.keys(document.webhooks).sort(), [...EVENT_TYPE_NAMES].sort());
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    ajv.addSchema({ $id: 'doc', components: document.components }, 'doc');
    for (const [name, schema] of Object.entries(document.components.schemas as Record<string, object>)) {
      const withRefs = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
      assert.doesNotThrow(() => ajv.compile(withRefs), name);
    }
  });

  it('gives every request body and object schema examples its schema accepts, and rate-limit headers', async (t) => {
    const { document } = await fetchDocument(t);
    const schemas = document.components.schemas as Record<string, DocumentSchema>;
    const ajv = new Ajv2020({ strict: false });
    addFormats.default(ajv);
    ajv.addSchema({ $id: 'doc', components: document.components }, 'doc');
    const assertExamples = (name: string, schema: DocumentSchema) => {
      assert.ok(Array.isArray(schema.examples) && schema.examples.length > 0, `${name}: examples`);
      const validate = ajv.compile(
        JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')),
      );
      for (const example of schema.examples) {
        assert.ok(
          validate(example),
          `${name}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(example)}`,
        );
        // A text body (the people import's CSV) has a string example: no properties to name.
        const keys = typeof example === 'object' && example !== null ? Object.keys(example) : [];
        const unnamed = keys.filter((key) => !Object.hasOwn(schema.properties ?? {}, key));
        assert.deepEqual(unnamed, [], `${name}: example properties the schema does not name`);
      }
    };
    for (const [name, schema] of Object.entries(schemas))
      if (schema.type === 'object') assertExamples(name, schema);

    const rateLimitHeaders = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];
    let bodies = 0;
    for (const [path, item] of Object.entries(document.paths as Record<string, Record<string, Operation>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const name = `${method} ${path}`;
        for (const [mediaType, { schema }] of Object.entries(operation.requestBody?.content ?? {})) {
          const named = schema.$ref?.replace('#/components/schemas/', '');
          assertExamples(`${name} ${mediaType}`, named ? (schemas[named] as DocumentSchema) : schema);
          bodies++;
        }
        if (operation.security?.length === 0) continue;
        for (const [status, response] of Object.entries(operation.responses)) {
          if (!status.startsWith('2') && status !== '429') continue;
          for (const header of rateLimitHeaders) {
            const documented = response.headers?.[header]?.$ref;
            assert.equal(documented, `#/components/headers/${header}`, `${name} ${status}`);
          }
        }
        assert.ok(operation.responses['429']?.headers?.['Retry-After'], `${name}: Retry-After`);
      }
    }
    assert.ok(bodies >= 17, 'the request bodies were found');
    for (const header of rateLimitHeaders)
      assert.equal(document.components.headers[header].schema.type, 'integer', header);
  });
});

describe(`the interactive API reference on ${testDialect}`, () => {
  it('is served with its assets from this service, so it works offline', async (t) => {
    const api = await startApiFixture(t);
    const page = await fetch(`${api.url}/api/v1/docs`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.headers.get('content-security-policy') ?? '', /script-src 'self'/);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    assert.ok(assets.length >= 3);
    for (const asset of assets) {
      assert.match(asset, /^\/api\/v1\/docs\/assets\//, 'same origin, no CDN');
      const response = await fetch(`${api.url}${asset}`);
      assert.equal(response.status, 200, asset);
      assert.ok((await response.arrayBuffer()).byteLength > 0, asset);
    }
    const init = await (await fetch(`${api.url}/api/v1/docs/assets/init.js`)).text();
    assert.match(init, /\/api\/v1\/openapi\.json/);
    assert.equal((await fetch(`${api.url}/api/v1/docs/assets/..%2F..%2Fpackage.json`)).status, 404);
  });

  it('tries requests out against the host the page was loaded from, not BASE_URL', async (t) => {
    const api = await startApiFixture(t);
    assert.equal(api.runtime.config.baseUrl, 'http://svc.test', 'BASE_URL names another host');
    const document = (await (await fetch(`${api.url}/api/v1/openapi.json`)).json()) as { servers: unknown };
    assert.deepEqual(document.servers, [{ url: 'http://svc.test' }], 'the document names the public address');

    for (const pageUrl of [
      `${api.url}/api/v1/docs`,
      `${api.url.replace('127.0.0.1', 'localhost')}/api/v1/docs`,
    ]) {
      const init = await (await fetch(new URL('/api/v1/docs/assets/init.js', pageUrl))).text();
      let servers: { url: string }[] = [];
      const loaded = new Promise<void>((resolve) => {
        vm.runInNewContext(init, {
          window: { location: new URL(pageUrl) },
          fetch: (url: string, init: RequestInit) => fetch(new URL(url, pageUrl), init),
          SwaggerUIBundle: (options: { spec?: { servers: { url: string }[] } }) => {
            // Out of the script's realm, so that deepEqual compares plain objects.
            servers = JSON.parse(JSON.stringify(options.spec?.servers ?? []));
            resolve();
          },
        });
      });
      await loaded;
      const origin = new URL(pageUrl).origin;
      assert.deepEqual(servers, [{ url: origin, description: 'this host' }, { url: 'http://svc.test' }]);
      const tried = await fetch(`${servers[0]?.url}/api/v1/me`, {
        headers: { authorization: `Bearer ${api.org.key}` },
      });
      assert.equal(tried.status, 200, `try it out from ${origin}`);
    }
  });
});
