/**
 * The MCP server over stdio, for local MCP clients that start `agentstate mcp` as a child process: JSON-RPC
 * messages one per line on stdin and stdout. Nothing else may be written to stdout; errors go to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { createMcpServer, type McpServerOptions } from './server.js';

export interface StdioOptions extends McpServerOptions {
  readonly stdin?: NodeJS.ReadableStream & { pause(): unknown };
  readonly stdout?: NodeJS.WritableStream;
  /** Ends the server early (a signal); it also ends when stdin closes. */
  readonly signal?: AbortSignal;
}

/** Serves MCP on stdin/stdout until the client closes stdin (or `signal` aborts); resolves then. */
export async function serveMcpStdio(options: StdioOptions): Promise<void> {
  const stdin = options.stdin ?? process.stdin;
  const server = createMcpServer(options);
  const transport = new StdioServerTransport(
    stdin as typeof process.stdin,
    (options.stdout ?? process.stdout) as typeof process.stdout,
  );
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
  });
  const stop = () => {
    void server.close();
  };
  stdin.once('end', stop);
  stdin.once('close', stop);
  options.signal?.addEventListener('abort', stop, { once: true });
  try {
    await server.connect(transport);
    if (options.signal?.aborted) stop();
    await closed;
  } finally {
    stdin.off('end', stop);
    stdin.off('close', stop);
    options.signal?.removeEventListener('abort', stop);
  }
}
