import type { ListResourcesResult, ReadResourceResult } from '@modelcontextprotocol/server';
import { decodeToken, encodeToken } from '../db/cursor.ts';
import { type Caller, runRoute } from './calls.ts';
import type { McpDeps } from './context.ts';
import { mcpSdk } from './sdk.ts';
import { type ApiTool, toolsFromRoutes } from './tools.ts';

/**
 * Resources: the workspace's Annex A controls (JSON) and its approved policies (Markdown), named by
 * their REST URLs. Listing pages through the controls, then the policies, with the API's cursors.
 */
type Kind = 'controls' | 'policies';
const LIST: Record<Kind, { tool: string; query: Record<string, string> }> = {
  controls: { tool: 'listControls', query: {} },
  policies: { tool: 'listPolicies', query: { status: 'approved' } },
};
const GET: Record<Kind, string> = { controls: 'getControl', policies: 'getPolicy' };
const PAGE = 200;

/** The tools by name, per route table (one per application). */
const toolIndexes = new WeakMap<McpDeps['routeTable'], Map<string, ApiTool>>();
function toolNamed(deps: McpDeps, name: string): ApiTool {
  let index = toolIndexes.get(deps.routeTable);
  if (!index) {
    index = new Map(toolsFromRoutes(deps.routeTable).map((tool) => [tool.name, tool]));
    toolIndexes.set(deps.routeTable, index);
  }
  const tool = index.get(name);
  if (!tool) throw new Error(`the API has no operation ${name}`);
  return tool;
}

function encodeCursor(kind: Kind, cursor: string | null): string {
  return encodeToken({ kind, cursor });
}

function decodeCursor(cursor: string | undefined): { kind: Kind; cursor: string | null } {
  const decoded =
    cursor === undefined ? undefined : (decodeToken(cursor) as { kind?: unknown; cursor?: unknown });
  if (
    (decoded?.kind === 'controls' || decoded?.kind === 'policies') &&
    (decoded.cursor === null || typeof decoded.cursor === 'string')
  )
    return decoded as { kind: Kind; cursor: string | null };
  return { kind: 'controls', cursor: null };
}

async function readJson(deps: McpDeps, tool: string, args: Record<string, unknown>, caller: Caller) {
  const answer = await runRoute(deps.app, toolNamed(deps, tool), args, caller);
  return {
    status: answer.status,
    body: answer.body.length > 0 ? JSON.parse(answer.body.toString('utf8')) : null,
  };
}

export async function listResources(
  deps: McpDeps,
  caller: Caller,
  cursor: string | undefined,
): Promise<ListResourcesResult> {
  const position = decodeCursor(cursor);
  const list = LIST[position.kind];
  const page = await readJson(
    deps,
    list.tool,
    { ...list.query, limit: PAGE, ...(position.cursor ? { cursor: position.cursor } : {}) },
    caller,
  );
  if (page.status !== 200) return { resources: [] };
  const base = `${deps.config.baseUrl}/api/v1/${position.kind}`;
  const resources = (
    page.body.data as { id: string; reference?: string; title: string; summary?: string | null }[]
  ).map((item) =>
    position.kind === 'controls'
      ? {
          uri: `${base}/${item.id}`,
          name: `${item.reference} ${item.title}`,
          title: `${item.reference} ${item.title}`,
          description:
            'An ISO/IEC 27001:2022 Annex A control of the workspace: its status, owner and applicability.',
          mimeType: 'application/json',
        }
      : {
          uri: `${base}/${item.id}`,
          name: item.title,
          title: item.title,
          description: item.summary ?? 'An approved policy of the workspace.',
          mimeType: 'text/markdown',
        },
  );
  const next: string | null = page.body.next_cursor;
  const nextCursor = next
    ? encodeCursor(position.kind, next)
    : position.kind === 'controls'
      ? encodeCursor('policies', null)
      : undefined;
  return { resources, ...(nextCursor ? { nextCursor } : {}) };
}

export async function readResource(deps: McpDeps, caller: Caller, uri: string): Promise<ReadResourceResult> {
  const { ResourceNotFoundError } = await mcpSdk();
  const prefix = `${deps.config.baseUrl}/api/v1/`;
  const [kind, id, ...rest] = uri.startsWith(prefix) ? uri.slice(prefix.length).split('/') : [];
  if ((kind !== 'controls' && kind !== 'policies') || !id || rest.length > 0)
    throw new ResourceNotFoundError(uri);
  const answer = await readJson(deps, GET[kind], { id: decodeURIComponent(id) }, caller);
  if (answer.status !== 200) throw new ResourceNotFoundError(uri);
  if (kind === 'policies') {
    if (answer.body.status !== 'approved') throw new ResourceNotFoundError(uri);
    return { contents: [{ uri, mimeType: 'text/markdown', text: answer.body.body }] };
  }
  return { contents: [{ uri, mimeType: 'application/json', text: JSON.stringify(answer.body, null, 2) }] };
}
