/**
 * Tools of a tool registry (the ones the built-in agents' task steps call) offered to a model that calls
 * tools: `airline.book` is `airline_book` to the model (Chat Completions names allow no dot) and its calls
 * are recorded as actions named `airline.book`, with idempotency keys, like the task steps' own.
 */
import type { ToolRegistry } from '../runtime/tool.js';
import { type AgentTool, defineAgentTool } from './tool-loop.js';

/** The name a model sees for a registry tool. */
export function modelToolName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

/** The tools `names` asks for that the registry has, in that order (a tool it lacks is not offered). */
export function registryAgentTools(registry: ToolRegistry, names: readonly string[]): AgentTool[] {
  return names.flatMap((name) => {
    const tool = registry.get(name);
    if (tool === undefined) return [];
    const { lookup } = tool;
    return [
      defineAgentTool({
        name: modelToolName(tool.name),
        action: tool.name,
        description: tool.description,
        parameters: tool.params,
        run: (params, idempotencyKey, call) =>
          tool.execute(params, {
            idempotencyKey,
            signal: call?.signal ?? new AbortController().signal,
            attempt: call?.attempt ?? 1,
          }),
        ...(lookup === undefined ? {} : { lookup: (key: string) => lookup.call(tool, key) }),
      }),
    ];
  });
}
