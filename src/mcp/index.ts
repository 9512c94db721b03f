export { MCP_PATH, type McpDeps, mcpEndpoint } from './server.ts';
