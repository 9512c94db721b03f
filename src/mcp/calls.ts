import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { PRINCIPAL_HANDLE_HEADER, principalHandle } from '../api/index.ts';
import type { Principal } from '../api-keys/index.ts';
import type { ApiTool } from './tools.ts';

/** Who runs a tool: the principal the MCP request authenticated as, from where. */
export interface Caller {
  principal: Principal;
  ip: string;
  userAgent: string | undefined;
}

/** What a route answered, as the tool call reads it. */
export interface RouteAnswer {
  status: number;
  contentType: string;
  body: Buffer;
  retryAfter: string | undefined;
}

/** An argument the tool cannot turn into a request: answered like the API's own `invalid_request`. */
export class ToolInputError extends Error {
  readonly errors: { path: string; message: string }[];
  constructor(errors: { path: string; message: string }[]) {
    super('The arguments do not fit the tool.');
    this.errors = errors;
  }
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A query value as the route reads it: arrays repeat the parameter, objects cannot be sent. */
function queryValues(value: unknown): string[] | undefined {
  if (Array.isArray(value))
    return value.every((item) => typeof item !== 'object') ? value.map(String) : undefined;
  if (value === null || typeof value === 'object') return undefined;
  return [String(value)];
}

function multipart(fields: Record<string, unknown>, path: string): { body: Buffer; contentType: string } {
  const boundary = `----svc-mcp-${randomBytes(12).toString('hex')}`;
  const parts: Buffer[] = [];
  const errors: { path: string; message: string }[] = [];
  const quoted = (value: string) => value.replace(/["\r\n\\]/g, '_');
  for (const [name, value] of Object.entries(fields)) {
    if (isObject(value)) {
      const { filename, content_base64: content } = value;
      if (typeof filename !== 'string' || typeof content !== 'string' || !BASE64.test(content)) {
        errors.push({
          path: `${path}/${name}`,
          message: 'must be { filename, content_base64 } with base64 content',
        });
        continue;
      }
      parts.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"; filename="${quoted(filename)}"\r\n` +
            'Content-Type: application/octet-stream\r\n\r\n',
        ),
        Buffer.from(content, 'base64'),
        Buffer.from('\r\n'),
      );
      continue;
    }
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === null || typeof item === 'object') {
        errors.push({ path: `${path}/${name}`, message: 'must be text, a number or a list of them' });
        continue;
      }
      parts.push(
        Buffer.from(
          `--${boundary}\r\nContent-Disposition: form-data; name="${quoted(name)}"\r\n\r\n${String(item)}\r\n`,
        ),
      );
    }
  }
  if (errors.length > 0) throw new ToolInputError(errors);
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/**
 * Runs the tool's route in this process as the caller (`app.inject`), so authentication, plan
 * limits, entitlements, validation, rate limits and the audit log are the REST API's own. The
 * principal travels as a one-time handle (see `principalHandle`), never as a credential.
 */
export async function runRoute(
  app: FastifyInstance,
  tool: ApiTool,
  args: unknown,
  caller: Caller,
): Promise<RouteAnswer> {
  const input = args === undefined ? {} : args;
  if (!isObject(input)) throw new ToolInputError([{ path: '', message: 'the arguments must be an object' }]);
  const known = new Set([...tool.pathParams, ...tool.queryParams, ...(tool.body === 'none' ? [] : ['body'])]);
  const unknown = Object.keys(input).filter((name) => !known.has(name));
  const missing = tool.pathParams.filter(
    (name) => input[name] === undefined || input[name] === null || input[name] === '',
  );
  if (tool.bodyRequired && input.body === undefined) missing.push('body');
  if (unknown.length > 0 || missing.length > 0)
    throw new ToolInputError([
      ...unknown.map((name) => ({ path: name, message: 'is not an argument of this tool' })),
      ...missing.map((name) => ({ path: name, message: 'is required' })),
    ]);
  let url = tool.url;
  for (const name of tool.pathParams) {
    const value = input[name];
    if (typeof value !== 'string' && typeof value !== 'number')
      throw new ToolInputError([{ path: name, message: 'must be text' }]);
    url = url.replace(`:${name}`, encodeURIComponent(String(value)));
  }
  const search = new URLSearchParams();
  for (const name of tool.queryParams) {
    if (input[name] === undefined) continue;
    const values = queryValues(input[name]);
    if (!values)
      throw new ToolInputError([{ path: name, message: 'must be text, a number or a list of them' }]);
    for (const value of values) search.append(name, value);
  }
  const query = search.toString();
  const headers: Record<string, string> = {
    accept: 'application/json',
    [PRINCIPAL_HANDLE_HEADER]: '',
    ...(caller.userAgent ? { 'user-agent': caller.userAgent } : {}),
  };
  let payload: string | Buffer | undefined;
  if (tool.body === 'json' && input.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(input.body);
  } else if (tool.body === 'text' && input.body !== undefined) {
    if (typeof input.body !== 'string') throw new ToolInputError([{ path: 'body', message: 'must be text' }]);
    headers['content-type'] = tool.mediaType ?? 'text/plain';
    payload = input.body;
  } else if (tool.body === 'multipart') {
    if (!isObject(input.body)) throw new ToolInputError([{ path: 'body', message: 'must be an object' }]);
    const form = multipart(input.body, 'body');
    headers['content-type'] = form.contentType;
    payload = form.body;
  }
  const handle = principalHandle(caller.principal);
  headers[PRINCIPAL_HANDLE_HEADER] = handle.handle;
  try {
    const response = await app.inject({
      method: tool.method as 'GET',
      url: `${url}${query ? `?${query}` : ''}`,
      headers,
      remoteAddress: caller.ip,
      ...(payload !== undefined ? { payload } : {}),
    });
    const retryAfter = response.headers['retry-after'];
    return {
      status: response.statusCode,
      contentType: String(response.headers['content-type'] ?? ''),
      body: response.rawPayload,
      retryAfter: retryAfter === undefined ? undefined : String(retryAfter),
    };
  } finally {
    handle.release();
  }
}
