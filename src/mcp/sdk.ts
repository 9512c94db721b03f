type McpSdk = typeof import('@modelcontextprotocol/server');

let loading: Promise<McpSdk> | undefined;

/**
 * The MCP SDK (with the zod it brings, a tenth of a second of CPU) is loaded with the first MCP
 * request, not at start-up: most processes never serve one (docs/decisions.md).
 */
export function mcpSdk(): Promise<McpSdk> {
  loading ??= import('@modelcontextprotocol/server');
  return loading;
}
