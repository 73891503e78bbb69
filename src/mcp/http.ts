/**
 * MCP over Streamable HTTP at `/mcp` on the HTTP server, stateless: every POST is answered on its own (no
 * `Mcp-Session-Id`), by a server made for that request with the access of its credential. The server's
 * `onRequest` hook has already authenticated the bearer token (a tenant key, a user token, or loopback
 * mode), so `/mcp` takes exactly the credentials of the REST API and sees what they see; the rate limit and
 * the body limit apply as to any route. A GET (a stream of server-sent messages) or a DELETE (the end of a
 * session) has nothing to do without sessions and answers 405.
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodApp } from '../http/deps.js';
import type { StateStore } from '../store/types.js';
import type { McpAccess } from './access.js';
import type { McpRuntime } from './record-tools.js';
import { createMcpServer } from './server.js';

export const MCP_PATH = '/mcp';

export interface McpHttpOptions {
  readonly store: StateStore;
  /** The server's agent runtime, when it has one: the open tasks and context its turns use. */
  readonly runtime?: McpRuntime | null;
  /** The version the server gives in its handshake. */
  readonly version?: string;
}

function jsonRpcError(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply
    .status(status)
    .header('content-type', 'application/json')
    .send(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/** Registers POST, GET and DELETE `/mcp` on the app (hidden from the OpenAPI document). */
export function registerMcpHttp(app: ZodApp, options: McpHttpOptions): void {
  const { store, runtime = null } = options;

  const post = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const { tenant_id, user_id } = request.principal;
    const access: McpAccess = { tenant_id, user_id };
    const server = createMcpServer({
      store,
      access,
      runtime,
      ...(options.version === undefined ? {} : { version: options.version }),
      log: (error, where) => request.log.error({ err: error }, `mcp: ${where} failed`),
    });
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    // From here the transport writes the answer to the raw response: fastify sends nothing more.
    reply.hijack();
    reply.raw.once('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (error) {
      request.log.error({ err: error }, 'mcp: the request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: ErrorCode.InternalError, message: 'internal error' },
            id: null,
          }),
        );
      } else if (!reply.raw.writableEnded) {
        reply.raw.end();
      }
    }
  };

  const notAllowed = async (_request: FastifyRequest, reply: FastifyReply) =>
    jsonRpcError(
      reply.header('allow', 'POST'),
      405,
      ErrorCode.ConnectionClosed,
      'this MCP endpoint is stateless: send each request as a POST',
    );

  app.post(MCP_PATH, { schema: { hide: true } }, post);
  app.get(MCP_PATH, { schema: { hide: true } }, notAllowed);
  app.delete(MCP_PATH, { schema: { hide: true } }, notAllowed);
}
