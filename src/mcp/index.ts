/**
 * `agentstate/mcp`: the MCP server over a store, for one credential's access, and its stdio transport
 * (docs/mcp.md). `agentstate serve` mounts it at /mcp; `agentstate mcp` serves it over stdio.
 */
export { describeAccess, type McpAccess, readScopeFor, userScopeFor } from './access.js';
export type { McpRuntime } from './record-tools.js';
export { contextUri, DEFAULT_CONTEXT_TOKENS } from './resources.js';
export type { McpErrorLog } from './results.js';
export { createMcpServer, MCP_SERVER_NAME, type McpServerOptions } from './server.js';
export { type StdioOptions, serveMcpStdio } from './stdio.js';
