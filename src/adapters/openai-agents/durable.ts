/**
 * Durable tools and model for the OpenAI Agents SDK (`@openai/agents`). Inside
 * `durableRun(store, options, async (ctx) => ...)`:
 *
 *   const agent = new Agent({
 *     name: 'booker',
 *     model: durableModel(ctx, await provider.getModel('gpt-4.1')),
 *     tools: durableTools(ctx, [search, book], { search_flights: { readOnly: true }, book_flight: { lookup } }),
 *   });
 *   const result = await run(agent, prompt);
 *
 * where `book` is an ordinary `tool({ ..., execute: (input, _run, details) => airline.book(idempotencyKeyOf(details), input) })`.
 *
 * Each model answer (`getResponse`) is a recorded step: a resumed run does not ask the model again for an
 * answer it recorded. Each function tool call is an action (recorded PENDING before the tool runs, with an
 * idempotency key that `idempotencyKeyOf(details)` gives the tool; on resume a PENDING call is recovered
 * through the tool's `lookup`, never run twice); a tool marked `readOnly` is a recorded step instead. Calls
 * are recorded in the order the SDK starts them, one at a time. A tool whose action FAILED answers the model
 * with the error, as the SDK does for a tool that throws. Streaming (`run(..., { stream: true })`) is not
 * covered yet.
 *
 * Note: a tool made by `tool()` turns an error its `execute` throws into text for the model (its
 * `errorFunction`), which is then the action's recorded result. Give an effectful tool
 * `errorFunction: null` to have such an error go through the action's retries and `lookup` instead.
 */
import { type FunctionTool, type Model, type ModelResponse, type Tool, Usage } from '@openai/agents';
import { invalidRequest } from '../../core/errors.js';
import type { JsonValue } from '../../core/json.js';
import type { Codec } from '../../durable/codec.js';
import { ActionFailedError } from '../../durable/signals.js';
import type { DurableContext, LookupAnswer } from '../../durable/types.js';
import { modelAnswer, queueOf } from '../shared/durable-calls.js';

/** What is kept of a model answer: all of it as JSON, its usage made a `Usage` again on replay. */
const answerCodec: Codec<ModelResponse> = {
  encode: (response) => JSON.parse(JSON.stringify(response)) as JsonValue,
  decode: (json) => {
    const value = json as unknown as ModelResponse;
    return { ...value, usage: new Usage(value.usage) };
  },
};

/** The model with each answer recorded as a step of the run (`name` names the steps, default `model`). */
export function durableModel(
  ctx: DurableContext,
  model: Model,
  options: { readonly name?: string } = {},
): Model {
  const name = options.name ?? 'model';
  const queue = queueOf(ctx);
  const durable: Model = {
    getResponse: (request) =>
      queue(() =>
        ctx.step(name, () => modelAnswer(() => model.getResponse(request)), { codec: answerCodec }),
      ),
    getStreamedResponse: () => {
      throw invalidRequest('durableModel: streamed runs are not supported yet; run without stream');
    },
  };
  if (model.supportsPromptModelSelection !== undefined)
    return { ...durable, supportsPromptModelSelection: model.supportsPromptModelSelection };
  return durable;
}

export interface DurableToolOptions {
  /** Whether a call with this key took effect (see `ctx.action`); without it an interrupted call is UNKNOWN. */
  readonly lookup?: (idempotencyKey: string) => Promise<LookupAnswer<JsonValue>>;
  /** No effect on the outside world: a recorded step, made again if the process dies during it. */
  readonly readOnly?: boolean;
}

/** The details a function tool's `execute` gets as its third argument. */
export type ToolDetails = Parameters<FunctionTool['invoke']>[2];

const KEY = 'agentstateIdempotencyKey';

/** The idempotency key of this call, inside the `execute` of a tool wrapped by `durableTools`. */
export function idempotencyKeyOf(details: ToolDetails): string {
  const key = (details as { [KEY]?: unknown } | undefined)?.[KEY];
  if (typeof key !== 'string')
    throw invalidRequest('idempotencyKeyOf: the tool was not called through durableTools');
  return key;
}

/** The arguments the model gave, as JSON (what the action records as its params). */
function paramsOf(input: string): JsonValue {
  try {
    return JSON.parse(input === '' ? '{}' : input) as JsonValue;
  } catch {
    return input;
  }
}

function wrap(ctx: DurableContext, tool: FunctionTool, own: DurableToolOptions): FunctionTool {
  const queue = queueOf(ctx);
  const invoke = tool.invoke.bind(tool);
  const call =
    (runContext: Parameters<FunctionTool['invoke']>[0], input: string, details: ToolDetails) =>
    (key: string, signal?: AbortSignal) =>
      invoke(runContext, input, {
        ...details,
        ...(signal === undefined ? {} : { signal }),
        [KEY]: key,
      } as ToolDetails) as Promise<JsonValue>;
  return {
    ...tool,
    invoke: (runContext, input, details) =>
      queue(async () => {
        const made = call(runContext, input, details);
        if (own.readOnly === true) {
          const id = details?.toolCall?.callId ?? 'call';
          return ctx.step(`tool ${tool.name}`, () => made(`${ctx.taskId}:${id}`));
        }
        const { lookup } = own;
        try {
          return await ctx.action(tool.name, paramsOf(input), {
            run: (key, attempt) => made(key, attempt.signal),
            ...(lookup === undefined ? {} : { lookup }),
          });
        } catch (error) {
          if (error instanceof ActionFailedError) return `${error.code}: ${error.message}`;
          throw error;
        }
      }),
  };
}

/**
 * The tools with each function tool's call recorded as an action of the run (or a step, for `readOnly`
 * ones); other tools (hosted, computer, ...) are given back as they are.
 */
export function durableTools<T extends readonly Tool[]>(
  ctx: DurableContext,
  tools: T,
  options: { readonly [name: string]: DurableToolOptions | undefined } = {},
): T {
  return tools.map((tool) =>
    tool.type === 'function' ? wrap(ctx, tool as FunctionTool, options[tool.name] ?? {}) : tool,
  ) as unknown as T;
}
