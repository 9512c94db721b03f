import { Readable } from 'node:stream';
import type {
  CallToolResult,
  createMcpHandler,
  McpRequestContext,
  ReadResourceResult,
  Server,
} from '@modelcontextprotocol/server';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticateApiKey, isWellFormedApiKey, type Principal } from '../api-keys/index.ts';
import { PROBLEM_ERRORS, problem, sendProblem } from '../http/problem.ts';
import { sendRateLimited } from '../http/rate-limit.ts';
import { mcpResourceOf, protectedResourceMetadataUrl, verifyAccessToken } from '../oauth/index.ts';
import { type Caller, runRoute, ToolInputError } from './calls.ts';
import type { McpDeps } from './context.ts';
import { listResources, readResource } from './resources.ts';
import { mcpSdk } from './sdk.ts';
import { type ApiTool, toolsFromRoutes } from './tools.ts';

export const MCP_PATH = '/mcp';

type McpHandler = ReturnType<typeof createMcpHandler>;

const UNFORWARDED_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'host',
]);

const INSTRUCTIONS =
  "Tools for one ISO 27001 compliance workspace: its controls (ISO/IEC 27001:2022 Annex A), tasks, evidence, risks, vendors, people, policies, webhooks and audit log. Each tool is one operation of the workspace's REST API (/api/v1), with the same inputs, answers and errors. Start with getMe. Lists answer one page: pass next_cursor as cursor for the next. A refused call answers isError with the API's problem: act on its `code` and `errors`.";

/** The text an agent reads for an answer: the JSON itself. */
function jsonText(value: unknown): string {
  return JSON.stringify(value, null, 2);
}

/** A problem (the REST API's, or an argument refused before the route ran) as a tool error. */
function toolError(body: unknown): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: jsonText(body) }] };
}

async function callTool(
  deps: McpDeps,
  tool: ApiTool,
  args: unknown,
  caller: Caller,
): Promise<CallToolResult> {
  let answer: Awaited<ReturnType<typeof runRoute>>;
  try {
    answer = await runRoute(deps.app, tool, args, caller);
  } catch (error) {
    if (!(error instanceof ToolInputError)) throw error;
    return toolError({
      status: 400,
      code: 'invalid_request',
      detail: `The arguments do not fit the tool ${tool.name}; see its input schema.`,
      errors: error.errors,
    });
  }
  const isJson = /\bjson\b/i.test(answer.contentType);
  if (answer.status >= 400) {
    const body = isJson ? JSON.parse(answer.body.toString('utf8')) : { status: answer.status };
    return toolError({
      ...body,
      ...(answer.retryAfter ? { retry_after_seconds: Number(answer.retryAfter) } : {}),
    });
  }
  if (answer.status === 204 || answer.body.length === 0)
    return { content: [{ type: 'text', text: 'Done.' }] };
  if (!isJson) {
    return {
      content: [
        {
          type: 'resource',
          resource: {
            uri: `${deps.config.baseUrl}${tool.url}`,
            mimeType: answer.contentType.split(';')[0] ?? 'application/octet-stream',
            blob: answer.body.toString('base64'),
          },
        },
      ],
    };
  }
  const body = JSON.parse(answer.body.toString('utf8'));
  return {
    content: [{ type: 'text', text: jsonText(body) }],
    ...(tool.outputSchema && body !== null && typeof body === 'object' ? { structuredContent: body } : {}),
  };
}

/** One server per request (the endpoint is stateless): its tools, resources and the caller. */
function serverFor(
  McpServer: typeof Server,
  deps: McpDeps,
  tools: readonly ApiTool[],
  caller: Caller,
): Server {
  const server = new McpServer(
    { name: 'svc-compliance-workspace', title: 'Compliance workspace', version: '1' },
    { capabilities: { tools: {}, resources: {} }, instructions: INSTRUCTIONS },
  );
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  server.setRequestHandler('tools/list', async () => ({
    tools: tools.map((tool) => ({
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: tool.inputSchema as { type: 'object' },
      ...(tool.outputSchema ? { outputSchema: tool.outputSchema as { type: 'object' } } : {}),
      annotations: tool.annotations,
    })),
  }));
  server.setRequestHandler('tools/call', async (request) => {
    const tool = byName.get(request.params.name);
    const result = tool
      ? await callTool(deps, tool, request.params.arguments, caller)
      : toolError({
          status: 404,
          code: 'unknown_tool',
          detail: `There is no tool ${request.params.name}; list the tools.`,
        });
    return server.projectCallToolResult(result, tool?.outputSchema);
  });
  server.setRequestHandler('resources/list', async (request) =>
    listResources(deps, caller, request.params?.cursor),
  );
  server.setRequestHandler(
    'resources/read',
    async (request): Promise<ReadResourceResult> => readResource(deps, caller, request.params.uri),
  );
  return server;
}

/**
 * The caller, or undefined once the request has been answered with the 401 the MCP authorization
 * spec asks for (naming the resource's metadata). Never the sent reply: a reply is a thenable, and
 * an async function answering one settles with nothing.
 */
async function authenticate(
  deps: McpDeps,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<Principal | undefined> {
  const challenge = (error?: string) =>
    `Bearer resource_metadata="${protectedResourceMetadataUrl(deps.config.baseUrl)}"${error ? `, error="${error}"` : ''}`;
  const refuse = (code: string, detail: string, error?: string) => {
    reply.header('www-authenticate', challenge(error));
    sendProblem(reply, problem(request, 401, code, detail));
    return undefined;
  };
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  const token = match?.[1];
  if (!token)
    return refuse(
      'unauthorized',
      'Connect with OAuth (see the resource metadata in WWW-Authenticate) or send an API key as `Authorization: Bearer svc_live_...`.',
    );
  if (isWellFormedApiKey(token)) {
    const verified = await authenticateApiKey(deps.db, deps.clock, token);
    if (!verified.ok)
      return refuse(`api_key_${verified.error}`, `The API key is ${verified.error}.`, 'invalid_token');
    return verified.value;
  }
  const verified = await verifyAccessToken(deps, token, mcpResourceOf(deps.config.baseUrl));
  if (!verified.ok)
    return refuse(
      'invalid_token',
      'The access token is not valid, has expired or was revoked.',
      'invalid_token',
    );
  const grant = verified.value;
  return {
    keyId: grant.grantId,
    workspaceId: grant.workspaceId,
    name: grant.clientName,
    prefix: 'oauth',
    plan: grant.plan,
    readOnly: grant.access === 'read',
    actor: { userId: grant.userId, label: `${grant.clientName} via MCP, on behalf of ${grant.userEmail}` },
  };
}

/** The MCP endpoint: Streamable HTTP, stateless (2026-07-28, and 2025-era clients per request). */
export async function mcpEndpoint(scope: FastifyInstance, deps: McpDeps): Promise<void> {
  const perIp = deps.rateLimiters.create('mcp-ip', {
    max: deps.config.api.perIpMax,
    windowMs: deps.config.rateLimit.windowMs,
  });
  let tools: ApiTool[] | undefined;
  const bodyLimit = Math.max(
    deps.config.bodyLimitBytes,
    Math.ceil(deps.config.api.evidenceMaxBytes * 1.4) + 64 * 1024,
  );
  let handler: Promise<McpHandler> | undefined;
  const openHandler = () =>
    (handler ??= mcpSdk().then((sdk) =>
      sdk.createMcpHandler(
        (context: McpRequestContext) => {
          tools ??= toolsFromRoutes(deps.routeTable);
          return serverFor(sdk.Server, deps, tools, context.authInfo?.extra?.caller as Caller);
        },
        {
          maxRequestBodySize: bodyLimit,
          onerror: (error) => scope.log.warn({ err: error }, 'mcp request refused'),
        },
      ),
    ));
  scope.addHook('onClose', async () => (await handler)?.close());

  // Browser-based clients (the MCP Inspector's direct mode) call from other origins; credentials
  // are bearer tokens a page must hold itself, never cookies, so any origin may ask.
  scope.addHook('onSend', async (request, reply) => {
    if (request.routeOptions.url !== MCP_PATH) return;
    reply
      .header('access-control-allow-origin', '*')
      .header('access-control-expose-headers', 'www-authenticate, mcp-protocol-version, mcp-session-id');
  });
  scope.options(MCP_PATH, async (_request, reply) =>
    reply
      .code(204)
      .header('access-control-allow-methods', 'GET, POST, DELETE, OPTIONS')
      .header(
        'access-control-allow-headers',
        'authorization, content-type, accept, mcp-protocol-version, mcp-session-id, last-event-id',
      )
      .header('access-control-max-age', '600')
      .send(),
  );

  scope.route({
    method: ['GET', 'POST', 'DELETE'],
    url: MCP_PATH,
    bodyLimit,
    handler: async (request, reply) => {
      const verdict = await perIp.hit(request.ip);
      if (!verdict.allowed) return sendRateLimited(request, reply, PROBLEM_ERRORS, verdict, 'address');
      const principal = await authenticate(deps, request, reply);
      if (!principal) return reply;
      const caller: Caller = { principal, ip: request.ip, userAgent: request.headers['user-agent'] };
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) {
        // The body is handed over parsed; its length and the connection's headers are not the handler's.
        if (value === undefined || UNFORWARDED_HEADERS.has(name)) continue;
        for (const item of Array.isArray(value) ? value : [value]) headers.append(name, String(item));
      }
      const webRequest = new Request(`${deps.config.baseUrl}${MCP_PATH}`, {
        method: request.method,
        headers,
        ...(request.method === 'POST' && request.body !== undefined
          ? { body: JSON.stringify(request.body) }
          : {}),
      });
      const response = await (await openHandler()).fetch(webRequest, {
        authInfo: { token: 'verified', clientId: principal.keyId, scopes: [], extra: { caller } },
        ...(request.method === 'POST' ? { parsedBody: request.body } : {}),
      });
      reply.code(response.status);
      response.headers.forEach((value, name) => {
        reply.header(name, value);
      });
      if (!response.body) return reply.send();
      if ((response.headers.get('content-type') ?? '').includes('text/event-stream'))
        return reply.send(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream));
      return reply.send(Buffer.from(await response.arrayBuffer()));
    },
  });
}
