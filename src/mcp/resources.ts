/**
 * The session context resource: what the session's next model call would see, as `GET
 * /v1/sessions/{id}/context` answers it (the runtime's own builder when the server has one, else
 * `buildContext`): `{system, messages, token_count, ...}` as JSON.
 *
 *   agentstate://sessions/{session_id}/context                  (a budget of 4000 tokens)
 *   agentstate://sessions/{session_id}/context?max_tokens=N     (1 to 1 000 000)
 *
 * Listing the resources lists the context of the newest sessions the credential sees.
 */
import { type McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { buildContext } from '../context/index.js';
import { AgentStateError } from '../core/errors.js';
import { readScopeFor } from './access.js';
import type { RecordToolDeps } from './record-tools.js';
import type { McpErrorLog } from './results.js';

export const DEFAULT_CONTEXT_TOKENS = 4000;
const MAX_CONTEXT_TOKENS = 1_000_000;
/** The error code MCP names for a resource that is not there. */
const RESOURCE_NOT_FOUND = -32002;
const LISTED_SESSIONS = 50;

/**
 * The JSON-RPC error of a resource read. Not the SDK's McpError, whose message already starts with "MCP
 * error <code>:", which the client adds once more.
 */
class ResourceError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

export function contextUri(sessionId: string, maxTokens?: number): string {
  const base = `agentstate://sessions/${encodeURIComponent(sessionId)}/context`;
  return maxTokens === undefined ? base : `${base}?max_tokens=${maxTokens}`;
}

function one(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function parseMaxTokens(text: string | undefined): number {
  if (text === undefined) return DEFAULT_CONTEXT_TOKENS;
  const n = Number(text);
  if (!/^\d{1,7}$/.test(text) || n < 1 || n > MAX_CONTEXT_TOKENS) {
    throw new ResourceError(
      ErrorCode.InvalidParams,
      `max_tokens must be a whole number from 1 to ${MAX_CONTEXT_TOKENS}, got ${JSON.stringify(text)}`,
    );
  }
  return n;
}

/** A store error as the JSON-RPC error a resource read answers; anything unexpected logged, its text not shown. */
function asResourceError(error: unknown, log: McpErrorLog): ResourceError {
  if (error instanceof ResourceError) return error;
  if (error instanceof AgentStateError) {
    const code =
      error.code === 'not_found'
        ? RESOURCE_NOT_FOUND
        : error.code === 'invalid_request'
          ? ErrorCode.InvalidParams
          : ErrorCode.InternalError;
    return new ResourceError(code, `${error.code}: ${error.message}`);
  }
  log(error, 'resource session context');
  return new ResourceError(
    ErrorCode.InternalError,
    "reading the context failed; the server's log has the details",
  );
}

export function registerContextResources(server: McpServer, deps: RecordToolDeps): void {
  const { store, access, log, runtime } = deps;

  const read = async (uri: URL, sessionId: string, maxTokens: number): Promise<ReadResourceResult> => {
    try {
      const scope = readScopeFor(access);
      const session = await store.getSession(scope, sessionId);
      if (session === null) {
        throw new ResourceError(RESOURCE_NOT_FOUND, `not_found: session ${sessionId} not found`);
      }
      let context: Record<string, unknown>;
      if (runtime?.context) {
        context = await runtime.context(scope, session, maxTokens);
      } else {
        const built = await buildContext({ store, scope, sessionId: session.id, maxTokens });
        const model = runtime?.modelFor?.(session);
        context = model === undefined ? { ...built } : { ...built, model };
      }
      return {
        contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(context) }],
      };
    } catch (error) {
      throw asResourceError(error, log);
    }
  };

  const description =
    "What the session's next model call would see: the agent's instructions and open tasks, the user's memory, a summary of older turns and the newest messages that fit the token budget.";

  server.registerResource(
    'session_context',
    new ResourceTemplate('agentstate://sessions/{session_id}/context', {
      list: async () => {
        try {
          const page = await store.listSessions(readScopeFor(access), { limit: LISTED_SESSIONS });
          return {
            resources: page.items.map((session) => ({
              uri: contextUri(session.id),
              name: `context of session ${session.id}`,
              description: `${session.status} session of user ${session.user_id}${session.agent === null ? '' : ` with agent ${session.agent}`}, last active ${session.last_activity_at}`,
              mimeType: 'application/json',
            })),
          };
        } catch (error) {
          throw asResourceError(error, log);
        }
      },
    }),
    { title: 'Session context', description, mimeType: 'application/json' },
    async (uri, variables) => read(uri, one(variables.session_id) ?? '', DEFAULT_CONTEXT_TOKENS),
  );

  server.registerResource(
    'session_context_sized',
    new ResourceTemplate('agentstate://sessions/{session_id}/context{?max_tokens}', { list: undefined }),
    { title: 'Session context within a token budget', description, mimeType: 'application/json' },
    async (uri, variables) =>
      read(uri, one(variables.session_id) ?? '', parseMaxTokens(one(variables.max_tokens))),
  );
}
