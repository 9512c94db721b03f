import type { FastifyContextConfig, FastifyInstance, FastifySchema, RouteOptions } from 'fastify';
import type { TSchema } from 'typebox';
import { pageItemSchema } from './pagination.ts';

declare module 'fastify' {
  interface FastifySchema {
    /** OpenAPI operation fields; the document is generated from the routes. */
    operationId?: string;
    summary?: string;
    description?: string;
    tags?: readonly string[];
  }
  interface FastifyContextConfig {
    /** Answered without an API key (the OpenAPI document). */
    public?: boolean;
    /** A multipart/form-data body the handler parses itself; documented, not validated by Fastify. */
    multipartBody?: TSchema;
  }
}

type JsonObject = Record<string, unknown>;

export interface DocumentedRoute {
  method: string;
  url: string;
  schema: FastifySchema;
  config: FastifyContextConfig;
}

const RESPONSE_DESCRIPTIONS: Record<string, string> = {
  200: 'OK',
  201: 'Created',
  204: 'Done; no content.',
  400: 'The request is invalid; `errors` names each invalid field.',
  401: 'The API key is missing, unknown, revoked or expired.',
  404: 'No such resource in the workspace of the API key (also for ids named in the body).',
  409: 'The change conflicts with the current state.',
  413: 'The body or upload is larger than allowed.',
  415: 'The content type is not accepted.',
  429: 'Too many requests; wait `Retry-After` seconds.',
  503: 'Storage is unavailable for now (`storage_unavailable`); nothing was kept: retry after `Retry-After` seconds.',
  507: 'There is no room to store the upload (`insufficient_storage`); nothing was kept: try again later.',
};

/**
 * The RateLimit header fields (see `setRateLimitHeaders`), named once in `components.headers`. Every
 * answer of an operation that needs an API key carries them, except a 401 (the key is counted
 * after it is authenticated).
 */
const RATE_LIMIT_HEADERS: Record<string, JsonObject> = {
  'RateLimit-Limit': {
    description:
      'Requests allowed per window: of the API key, or on a 429 of the limit that was reached (per key or per client address).',
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window.',
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends.',
    schema: { type: 'integer', minimum: 1 },
  },
};

const RATE_LIMIT_HEADER_REFS = Object.fromEntries(
  Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, { $ref: `#/components/headers/${name}` }]),
);

const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } };

/** What every list also answers to `Accept: text/csv` (see `answerList`). */
const CSV_EXPORT = {
  'text/csv': {
    schema: {
      type: 'string',
      description:
        'Every row the filters match (`limit` and `cursor` are ignored), as an attachment: a header ' +
        'row, then a row per item; an object field is spread into `field.member` columns, a list of ' +
        "values joined with `;`. A cell a spreadsheet would run as a formula starts with `'`.",
    },
  },
};

/** The routes of a scope, collected as they are registered, for the OpenAPI document. */
export function collectRoutes(scope: FastifyInstance, routes: DocumentedRoute[] = []): DocumentedRoute[] {
  scope.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method === 'HEAD') continue;
      routes.push({
        method: method.toLowerCase(),
        url: route.url,
        schema: route.schema ?? {},
        config: route.config ?? {},
      });
    }
  });
  return routes;
}

/** `/tasks/:id` -> `/tasks/{id}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/**
 * Replaces every occurrence of a named schema object with a `$ref` to its component, so the
 * document names `Task` once instead of inlining it in every operation.
 */
function referencing(named: Map<object, string>, root?: object) {
  const visit = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(visit);
    if (value === null || typeof value !== 'object') return value;
    const name = value !== root ? named.get(value) : undefined;
    if (name) return { $ref: `#/components/schemas/${name}` };
    return Object.fromEntries(Object.entries(value).map(([key, member]) => [key, visit(member)]));
  };
  return visit;
}

function parameters(
  schema: unknown,
  location: 'path' | 'query',
  ref: (value: unknown) => unknown,
): JsonObject[] {
  if (!schema || typeof schema !== 'object') return [];
  const { properties = {}, required = [] } = schema as { properties?: JsonObject; required?: string[] };
  return Object.entries(properties).map(([name, property]) => {
    const { description } = property as { description?: string };
    return {
      name,
      in: location,
      required: location === 'path' || required.includes(name),
      ...(description ? { description } : {}),
      schema: ref(property),
    };
  });
}

function responses(
  schema: FastifySchema,
  ref: (value: unknown) => unknown,
  rateLimited: boolean,
  bodyProblem: TSchema | undefined,
): JsonObject {
  const declared = {
    // Any body may be too large or of a type not taken; the routes declare only their own answers.
    ...(bodyProblem ? { 413: bodyProblem, 415: bodyProblem } : {}),
    ...((schema.response ?? {}) as Record<string, TSchema>),
  };
  return Object.fromEntries(
    Object.entries(declared).map(([status, body]) => {
      const description =
        RESPONSE_DESCRIPTIONS[status] ?? (body as { description?: string }).description ?? 'Response';
      const headers = {
        ...(rateLimited && status !== '401' ? RATE_LIMIT_HEADER_REFS : {}),
        ...(status === '429' || status === '503' ? RETRY_AFTER : {}),
      };
      const described = { description, ...(Object.keys(headers).length > 0 ? { headers } : {}) };
      if (status === '204') return [status, described];
      const mediaType =
        Number(status) >= 400
          ? 'application/problem+json'
          : ((body as { contentMediaType?: string }).contentMediaType ?? 'application/json');
      const content = { [mediaType]: { schema: ref(body) }, ...(pageItemSchema(body) ? CSV_EXPORT : {}) };
      return [status, { ...described, content }];
    }),
  );
}

/** A body schema per media type, as Fastify takes it (`{ content: { 'application/json': { schema } } }`). */
type BodyPerMediaType = { content: Record<string, { schema: TSchema }> };

function requestBody(route: DocumentedRoute, ref: (value: unknown) => unknown): JsonObject | undefined {
  const content: JsonObject = {};
  const body = route.schema.body as TSchema | BodyPerMediaType | undefined;
  if (body && 'content' in body) {
    for (const [mediaType, { schema }] of Object.entries(body.content))
      content[mediaType] = { schema: ref(schema) };
  } else if (body) {
    content['application/json'] = { schema: ref(body) };
  }
  if (route.config.multipartBody)
    content['multipart/form-data'] = { schema: ref(route.config.multipartBody) };
  return Object.keys(content).length > 0 ? { required: true, content } : undefined;
}

export interface DocumentOptions {
  info: JsonObject;
  serverUrl: string;
  /** Schemas named in `components.schemas` and referenced wherever they occur. */
  components: Record<string, TSchema>;
  securitySchemes: JsonObject;
  webhooks: JsonObject;
  /** The problem an operation with a request body answers with 413 and 415. */
  bodyProblem: TSchema;
}

/** An OpenAPI 3.1 document of `routes`, generated from their schemas. */
export function buildOpenApiDocument(
  routes: readonly DocumentedRoute[],
  options: DocumentOptions,
): JsonObject {
  const named = new Map<object, string>(
    Object.entries(options.components).map(([name, schema]) => [schema, name]),
  );
  const ref = referencing(named);
  const paths: Record<string, JsonObject> = {};
  for (const route of routes) {
    const { schema } = route;
    const path = openApiPath(route.url);
    const body = requestBody(route, ref);
    const operation = {
      ...(schema.operationId ? { operationId: schema.operationId } : {}),
      ...(schema.summary ? { summary: schema.summary } : {}),
      ...(schema.description ? { description: schema.description } : {}),
      ...(schema.tags ? { tags: schema.tags } : {}),
      ...(route.config.public ? { security: [] } : {}),
      parameters: [
        ...parameters(schema.params, 'path', ref),
        ...parameters(schema.querystring, 'query', ref),
      ],
      ...(body ? { requestBody: body } : {}),
      responses: responses(schema, ref, !route.config.public, body ? options.bodyProblem : undefined),
    };
    paths[path] = { ...paths[path], [route.method]: operation };
  }
  const components = Object.fromEntries(
    Object.entries(options.components).map(([name, schema]) => [name, referencing(named, schema)(schema)]),
  );
  return {
    openapi: '3.1.0',
    info: options.info,
    servers: [{ url: options.serverUrl }],
    security: Object.keys(options.securitySchemes).map((name) => ({ [name]: [] })),
    paths,
    webhooks: ref(options.webhooks),
    components: {
      schemas: components,
      headers: RATE_LIMIT_HEADERS,
      securitySchemes: options.securitySchemes,
    },
  };
}
