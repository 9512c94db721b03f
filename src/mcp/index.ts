export type { McpDeps } from './context.ts';
export { MCP_PATH, mcpEndpoint } from './server.ts';
