/**
 * MCP over Streamable HTTP at `/mcp` on the HTTP server, stateless: every POST is answered on its own (no
 * `Mcp-Session-Id`), by a server made for that request with the access of its credential. The server's
 * `onRequest` hook has already authenticated the bearer token (a tenant key, a user token, or loopback
 * mode), so `/mcp` takes exactly the credentials of the REST API and sees what they see; the rate limit, the
 * body limit and `Idempotency-Key` apply as to any route, since the answer is sent through fastify. A GET (a stream of server-sent messages) or a DELETE (the end of a
 * session) has nothing to do without sessions and answers 405.
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
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

/** The request as the web-standard transport reads it: its URL and headers (the body is parsed already). */
function webRequestOf(request: FastifyRequest): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const one of value) headers.append(name, one);
  }
  return new Request(`http://${request.host}${request.url}`, { method: request.method, headers });
}

/** Registers POST, GET and DELETE `/mcp` on the app (hidden from the OpenAPI document). */
export function registerMcpHttp(app: ZodApp, options: McpHttpOptions): void {
  const { store, runtime = null } = options;

  const post = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    const { tenant_id, user_id } = request.principal;
    const access: McpAccess = { tenant_id, user_id };
    const server = createMcpServer({
      store,
      access,
      runtime,
      ...(options.version === undefined ? {} : { version: options.version }),
      log: (error, where) => request.log.error({ err: error }, `mcp: ${where} failed`),
    });
    // The web-standard transport answers a Response, which fastify sends: the answer goes through the
    // server's hooks (request log, metrics, Idempotency-Key) like any route's.
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    try {
      await server.connect(transport);
      const response = await transport.handleRequest(webRequestOf(request), { parsedBody: request.body });
      const text = await response.text();
      response.headers.forEach((value, name) => {
        if (name !== 'content-length') void reply.header(name, value);
      });
      return reply.status(response.status).send(text === '' ? undefined : text);
    } finally {
      await server.close();
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
