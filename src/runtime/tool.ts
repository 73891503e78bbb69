/**
 * The tool contract: what the runtime calls when a task executes, and what downstream services implement.
 *
 * - `execute` gets the action's idempotency key. The same key is passed on every retry and on a run after a
 *   crash, so a downstream that honours it performs the side effect at most once.
 * - `lookup(key)` lets the runtime ask the downstream, after a crash or a time-out, whether the call with that
 *   key happened: `found` (with its result), `not found` (safe to run again with the same key), or
 *   `ambiguous` (the runtime marks the action UNKNOWN for a person to resolve).
 * - To say the outcome is certain, throw a `ToolError`: `rejected` (the downstream refused; nothing was done;
 *   the action FAILS) or `retryable` (nothing was done; the runtime retries with the same key after a
 *   backoff). Any other error, and a time-out, means "may or may not have happened": the runtime recovers it
 *   through `lookup`, never by a blind retry.
 */
import type { z } from 'zod';
import { invalidRequest } from '../core/errors.js';
import type { JsonValue } from '../core/json.js';

export interface ToolContext {
  /** Stable for the action: derived from task id, step index and canonical params. */
  readonly idempotencyKey: string;
  /** Aborted when the runtime's time-out for this call elapses. */
  readonly signal: AbortSignal;
  /** 1 for the first call, 2 for the first retry, ... */
  readonly attempt: number;
}

export type LookupResult =
  | { readonly found: true; readonly result: JsonValue }
  | { readonly found: false }
  | { readonly found: 'ambiguous'; readonly reason: string };

export interface Tool<P extends JsonValue = JsonValue> {
  /** Unique in a registry, for example `airline.book`. */
  readonly name: string;
  readonly description: string;
  /** Validates the params before the call; its JSON Schema is what a model sees. */
  readonly params: z.ZodType<P>;
  execute(params: P, ctx: ToolContext): Promise<JsonValue>;
  lookup?(idempotencyKey: string): Promise<LookupResult>;
}

export type ToolErrorKind = 'rejected' | 'retryable';

/** An outcome the tool is sure of. Everything else a tool throws is treated as an unknown outcome. */
export class ToolError extends Error {
  readonly kind: ToolErrorKind;
  readonly code: string;
  readonly details: JsonValue | undefined;

  constructor(
    kind: ToolErrorKind,
    code: string,
    message: string,
    options: { readonly details?: JsonValue; readonly cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolError';
    this.kind = kind;
    this.code = code;
    this.details = options.details;
  }
}

/** Tools by name. Looked up again on every run, so a resumed run uses the tools of its own process. */
export interface ToolRegistry {
  get(name: string): Tool | undefined;
  names(): string[];
}

/** Keeps the params type of a tool while letting it sit in a registry of `Tool`. */
export function defineTool<P extends JsonValue>(tool: Tool<P>): Tool {
  return tool as unknown as Tool;
}

export function createToolRegistry(tools: Iterable<Tool>): ToolRegistry {
  const byName = new Map<string, Tool>();
  for (const tool of tools) {
    if (byName.has(tool.name))
      throw invalidRequest(`tool registry: two tools are named ${JSON.stringify(tool.name)}`);
    byName.set(tool.name, tool);
  }
  return {
    get: (name) => byName.get(name),
    names: () => [...byName.keys()].sort(),
  };
}
