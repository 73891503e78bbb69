/**
 * `createMcpServer`: an MCP server (Model Context Protocol, `@modelcontextprotocol/sdk`) over a StateStore,
 * for one credential. Its tools read and write a user's memory and read sessions, messages, open tasks and
 * actions needing attention; its resources are sessions' contexts. Every call is scoped by `access`: the
 * tenant and user of the credential, never of a tool's arguments.
 *
 * One server serves one connection: stdio makes one for the process, Streamable HTTP one per request (the
 * HTTP endpoint is stateless), each with the access of the request's credential.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { StateStore } from '../store/types.js';
import { describeAccess, type McpAccess } from './access.js';
import { registerMemoryTools } from './memory-tools.js';
import { type McpRuntime, registerRecordTools } from './record-tools.js';
import { registerContextResources } from './resources.js';
import type { McpErrorLog } from './results.js';

export interface McpServerOptions {
  readonly store: StateStore;
  /** Who the connection acts for. */
  readonly access: McpAccess;
  /** The server's agent runtime, for the open tasks and context its turns use. Default: the store's own. */
  readonly runtime?: McpRuntime | null;
  /** Where errors no tool expected go (their text is not shown to the client). Default: stderr. */
  readonly log?: McpErrorLog;
  /** The version the server gives in its handshake. Default 0.0.0. */
  readonly version?: string;
}

export const MCP_SERVER_NAME = 'agentstate';

const defaultLog: McpErrorLog = (error, where) => {
  const text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  process.stderr.write(`agentstate mcp: ${where}: ${text}\n`);
};

export function createMcpServer(options: McpServerOptions): McpServer {
  const { store, access } = options;
  const log = options.log ?? defaultLog;
  const server = new McpServer(
    { name: MCP_SERVER_NAME, version: options.version ?? '0.0.0' },
    {
      capabilities: { tools: {}, resources: {} },
      instructions:
        `agentstate: the state of AI agents, seen as ${describeAccess(access)}. ` +
        "Use the memory tools for what to remember about a user across sessions (namespaces such as 'preferences' and 'facts'), " +
        'sessions_list, session_get and messages_list to pick up a conversation, tasks_open for work still in progress, ' +
        'and actions_attention for tool calls a person must settle. The resource agentstate://sessions/{session_id}/context ' +
        "is what the session's next model call would see.",
    },
  );
  const deps = { store, access, log, runtime: options.runtime ?? null };
  registerMemoryTools(server, deps);
  registerRecordTools(server, deps);
  registerContextResources(server, deps);
  return server;
}
