import type { DocumentedRoute } from '../api/index.ts';

type JsonObject = Record<string, unknown>;

/** A tool of the MCP endpoint: one /api/v1 operation, described by that route's own schemas. */
export interface ApiTool {
  name: string;
  title: string;
  description: string;
  inputSchema: JsonObject;
  outputSchema?: JsonObject;
  annotations: {
    title: string;
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
  method: string;
  /** The route's URL pattern, `/api/v1/tasks/:id`. */
  url: string;
  pathParams: string[];
  queryParams: string[];
  /** How `body` is sent: JSON, text of `mediaType` (a CSV file), or a form with a file (`file.content_base64`). */
  body: 'none' | 'json' | 'text' | 'multipart';
  mediaType?: string;
  bodyRequired: boolean;
}

/** A TypeBox schema as plain JSON Schema (its symbol-keyed members dropped). */
function plain(schema: unknown): JsonObject {
  return JSON.parse(JSON.stringify(schema ?? {})) as JsonObject;
}

function propertiesOf(schema: unknown): { properties: JsonObject; required: string[] } {
  const { properties = {}, required = [] } = plain(schema) as {
    properties?: JsonObject;
    required?: string[];
  };
  return { properties, required };
}

/**
 * The body of a route as a tool takes it: its JSON schema (`body`, or the `application/json`
 * content), else the one text media type it takes (a CSV file) as a string.
 */
function bodyOf(route: DocumentedRoute): { schema: JsonObject; mediaType: string } | undefined {
  const body = route.schema.body as JsonObject | undefined;
  if (!body) return undefined;
  const content = body.content as Record<string, { schema: unknown }> | undefined;
  if (!content) return { schema: plain(body), mediaType: 'application/json' };
  const json = content['application/json'];
  if (json) return { schema: plain(json.schema), mediaType: 'application/json' };
  const [mediaType, text] = Object.entries(content)[0] ?? [];
  if (!mediaType || !text || plain(text.schema).type !== 'string') return undefined;
  return { schema: plain(text.schema), mediaType };
}

/** The file parts of a multipart form become `{ filename, content_base64 }` objects. */
function multipartInput(form: unknown): JsonObject {
  const { properties, required } = propertiesOf(form);
  const fields = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => {
      const described = property as JsonObject;
      if (described.format !== 'binary') return [name, described];
      return [
        name,
        {
          type: 'object',
          description: `${described.description ?? 'The file.'} Its bytes as base64, with the file's name.`,
          properties: {
            filename: { type: 'string', minLength: 1, maxLength: 255 },
            content_base64: { type: 'string', contentEncoding: 'base64' },
          },
          required: ['filename', 'content_base64'],
          additionalProperties: false,
        },
      ];
    }),
  );
  return { type: 'object', properties: fields, required, additionalProperties: false };
}

/** The success answer's schema, when it is a JSON object (MCP output schemas are objects). */
function outputOf(route: DocumentedRoute): JsonObject | undefined {
  const responses = (route.schema.response ?? {}) as Record<string, unknown>;
  const success = responses['200'] ?? responses['201'] ?? responses['202'];
  if (!success) return undefined;
  const schema = plain(success);
  return schema.type === 'object' && !schema.contentMediaType ? schema : undefined;
}

function describe(route: DocumentedRoute, extra: string): string {
  const parts = [route.schema.summary, route.schema.description, extra].filter(
    (part): part is string => typeof part === 'string' && part !== '',
  );
  return parts.join('\n\n');
}

const PAGINATION_NOTE =
  'A list answers one page: `{ data, next_cursor }`. Pass `next_cursor` as `cursor` (with the same filters) for the next page; null means the last.';

/**
 * One tool per operation of the REST API, derived from the registered routes' schemas: path and
 * query parameters are top-level arguments, a JSON body is `body`. A route that also takes a file
 * (multipart) gets a second tool, `<operation>WithFile`. The document's own route is left out.
 */
export function toolsFromRoutes(routes: readonly DocumentedRoute[]): ApiTool[] {
  const tools: ApiTool[] = [];
  for (const route of routes) {
    const name = route.schema.operationId;
    if (!name || route.config.public) continue;
    const method = route.method.toUpperCase();
    const params = propertiesOf(route.schema.params);
    const query = propertiesOf(route.schema.querystring);
    const base = {
      method,
      url: route.url,
      pathParams: Object.keys(params.properties),
      queryParams: Object.keys(query.properties),
    };
    const annotations = (title: string) => ({
      title,
      readOnlyHint: method === 'GET',
      destructiveHint: method === 'DELETE',
      idempotentHint: method === 'GET' || method === 'PUT' || method === 'DELETE',
      openWorldHint: false,
    });
    const title = route.schema.summary ?? name;
    const isList = query.properties.cursor !== undefined;
    const inputOf = (bodySchema: JsonObject | undefined, bodyRequired: boolean) => ({
      type: 'object',
      properties: {
        ...params.properties,
        ...query.properties,
        ...(bodySchema ? { body: bodySchema } : {}),
      },
      required: [...base.pathParams, ...query.required, ...(bodySchema && bodyRequired ? ['body'] : [])],
      additionalProperties: false,
    });
    const body = bodyOf(route);
    const output = outputOf(route);
    tools.push({
      ...base,
      name,
      title,
      description: describe(route, isList ? PAGINATION_NOTE : ''),
      inputSchema: inputOf(body?.schema, body !== undefined),
      ...(output ? { outputSchema: output } : {}),
      annotations: annotations(title),
      body: !body ? 'none' : body.mediaType === 'application/json' ? 'json' : 'text',
      ...(body ? { mediaType: body.mediaType } : {}),
      bodyRequired: body !== undefined,
    });
    if (route.config.multipartBody) {
      const fileTitle = `${title} (a file)`;
      tools.push({
        ...base,
        name: `${name}WithFile`,
        title: fileTitle,
        description: describe(route, 'Send the file under `body` as `{ filename, content_base64 }`.'),
        inputSchema: inputOf(multipartInput(route.config.multipartBody), true),
        ...(output ? { outputSchema: output } : {}),
        annotations: annotations(fileTitle),
        body: 'multipart',
        bodyRequired: true,
      });
    }
  }
  return tools;
}
