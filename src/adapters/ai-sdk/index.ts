/**
 * `agentstate/ai-sdk`: Vercel AI SDK agents (`generateText` with tools) as durable runs. Inside
 * `durableRun(store, options, async (ctx) => ...)`:
 *
 *   const result = await generateText({
 *     model: durableModel(ctx, openai('gpt-4.1')),
 *     tools: durableTools(ctx, { book: tool({ ..., execute: (input, options) => airline.book(idempotencyKeyOf(options), input) }) },
 *                         { book: { lookup: (key) => airline.findByKey(key) } }),
 *     stopWhen: stepCountIs(8), prompt,
 *   });
 *
 * Each model answer (`doGenerate`) is a recorded step: a resumed run does not ask the model again for an
 * answer it recorded. Each tool call is an action (recorded PENDING before `execute` runs, with an
 * idempotency key that `idempotencyKeyOf(options)` gives the tool; on resume a PENDING call is recovered
 * through the tool's `lookup`, never run twice); a tool marked `readOnly` is a recorded step instead.
 * Calls are recorded in the order the SDK starts them, one at a time. With `streamText` a step holds the
 * answer's stream parts (durable-stream.ts); a chat store with `answer` runs each turn as a durable run.
 *
 * Chats of `useChat` back ends (`createChatStore`: persisted per step, resumable from the run event log on
 * any instance) are in chat-store.ts.
 */
import { type LanguageModelMiddleware, type ToolExecutionOptions, type ToolSet, wrapLanguageModel } from 'ai';
import { invalidRequest } from '../../core/errors.js';
import type { JsonValue } from '../../core/json.js';
import type { Codec } from '../../durable/codec.js';
import type { DurableContext, LookupAnswer } from '../../durable/types.js';
import { modelAnswer, queueOf } from '../shared/durable-calls.js';
import { recordedStream } from './durable-stream.js';

export {
  APPROVAL_ACTION_TYPE,
  APPROVED_NOT_RUN,
  type ApprovalAnswer,
  type ApprovalDecision,
  CHAT_RUN_NAME,
  type ChatAnswer,
  type ChatAnswerInput,
  type ChatApproval,
  type ChatStore,
  type ChatStoreOptions,
  type ChatStreamOptions,
  ChatTurn,
  type ChatValidation,
  closeCutOffParts,
  createChatStore,
  INTERRUPTED_TOOL_CALL,
  UNANSWERED_APPROVAL,
} from './chat-store.js';

/** A provider's language model, as `wrapLanguageModel` takes it (the AI SDK's `LanguageModelV3`). */
export type ProviderModel = Parameters<typeof wrapLanguageModel>[0]['model'];
type GenerateResult = Awaited<ReturnType<ProviderModel['doGenerate']>>;

/** What is kept of a model answer: everything the SDK reads, but the raw HTTP request and response. */
const answerCodec: Codec<GenerateResult> = {
  encode: (result) => {
    const { request: _request, response, ...rest } = result;
    const kept = {
      ...rest,
      ...(response === undefined
        ? {}
        : {
            response: {
              id: response.id,
              modelId: response.modelId,
              timestamp: response.timestamp?.toISOString(),
            },
          }),
    };
    return JSON.parse(JSON.stringify(kept)) as JsonValue;
  },
  decode: (json) => {
    const value = json as unknown as GenerateResult & { response?: { timestamp?: string } };
    const stamp = value.response?.timestamp;
    return {
      ...value,
      ...(value.response === undefined
        ? {}
        : {
            response: {
              ...value.response,
              timestamp: stamp === undefined ? undefined : new Date(stamp),
            },
          }),
    } as GenerateResult;
  },
};

/**
 * The model with each answer recorded as a step of the run (`generateText`, and `streamText`: a streamed
 * answer's parts, re-emitted on a replay); `name` names the steps.
 */
export function durableModel(
  ctx: DurableContext,
  model: ProviderModel,
  options: { readonly name?: string } = {},
): ProviderModel {
  const name = options.name ?? 'model';
  const queue = queueOf(ctx);
  const middleware: LanguageModelMiddleware = {
    specificationVersion: 'v3',
    wrapGenerate: ({ doGenerate }) =>
      queue(() => ctx.step(name, () => modelAnswer(doGenerate), { codec: answerCodec })),
    wrapStream: ({ doStream }) => recordedStream(ctx, name, doStream),
  };
  return wrapLanguageModel({ model, middleware });
}

export interface DurableToolOptions {
  /** Whether a call with this key took effect (see `ctx.action`); without it an interrupted call is UNKNOWN. */
  readonly lookup?: (idempotencyKey: string) => Promise<LookupAnswer<JsonValue>>;
  /** No effect on the outside world: a recorded step, made again if the process dies during it. */
  readonly readOnly?: boolean;
}

const KEY = 'agentstateIdempotencyKey';

/** The idempotency key of this call, inside the `execute` of a tool wrapped by `durableTools`. */
export function idempotencyKeyOf(options: ToolExecutionOptions): string {
  const key = (options as ToolExecutionOptions & { [KEY]?: unknown })[KEY];
  if (typeof key !== 'string')
    throw invalidRequest('idempotencyKeyOf: the tool was not called through durableTools');
  return key;
}

/** The tools with each call recorded as an action of the run (or a step, for `readOnly` ones). */
export function durableTools<T extends ToolSet>(
  ctx: DurableContext,
  tools: T,
  options: { readonly [K in keyof T]?: DurableToolOptions } = {},
): T {
  const queue = queueOf(ctx);
  const wrapped: Record<string, unknown> = {};
  for (const [name, tool] of Object.entries(tools)) {
    const execute = tool.execute;
    const own: DurableToolOptions = options[name as keyof T] ?? {};
    if (execute === undefined) {
      wrapped[name] = tool;
      continue;
    }
    const call = (input: unknown, base: ToolExecutionOptions, key: string, signal?: AbortSignal) =>
      Promise.resolve(
        execute(input as never, { ...base, ...(signal ? { abortSignal: signal } : {}), [KEY]: key } as never),
      ) as Promise<JsonValue>;
    wrapped[name] = {
      ...tool,
      execute: (input: unknown, base: ToolExecutionOptions) =>
        queue(() => {
          if (own.readOnly === true)
            return ctx.step(`tool ${name}`, () => call(input, base, `${ctx.taskId}:${base.toolCallId}`));
          const { lookup } = own;
          return ctx.action(name, input as JsonValue, {
            run: (key, attempt) => call(input, base, key, attempt.signal),
            ...(lookup === undefined ? {} : { lookup }),
          });
        }),
    };
  }
  return wrapped as T;
}
