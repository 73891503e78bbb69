/**
 * What a tool answers: its data as JSON text (what every MCP client shows a model) and as structured
 * content; or a tool error (`isError`) naming the error's code and saying what was wrong. A tool never
 * throws out of its handler: bad input and refused calls are answers the model can read and act on.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AgentStateError } from '../core/errors.js';

/** Called with an error no tool expected (not an AgentStateError), before the tool answers `internal`. */
export type McpErrorLog = (error: unknown, where: string) => void;

export function ok(data: Record<string, unknown>): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(data) }], structuredContent: data };
}

export function toolError(code: string, message: string): CallToolResult {
  return { content: [{ type: 'text', text: `${code}: ${message}` }], isError: true };
}

/** An AgentStateError as its code and message; anything else as `internal`, logged, its text not shown. */
export function failure(error: unknown, where: string, log: McpErrorLog): CallToolResult {
  if (error instanceof AgentStateError) return toolError(error.code, error.message);
  log(error, where);
  return toolError('internal', `${where} failed unexpectedly; the server's log has the details`);
}

/** Wraps a tool's work so that every outcome is an answer. */
export function guarded<A>(
  name: string,
  log: McpErrorLog,
  work: (args: A) => Promise<Record<string, unknown>>,
): (args: A) => Promise<CallToolResult> {
  return async (args) => {
    try {
      return ok(await work(args));
    } catch (error) {
      return failure(error, `tool ${name}`, log);
    }
  };
}
