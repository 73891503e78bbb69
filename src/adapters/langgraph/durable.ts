/**
 * Durable tools and model for LangGraph.js graphs (`StateGraph` with a `ToolNode`). The graph is invoked
 * inside `durableRun(store, options, async (ctx) => ...)`, its model and tools wrapped for that run:
 *
 *   const tools = durableTools(ctx, [searchFlights, bookFlight], {
 *     search_flights: { readOnly: true },
 *     book_flight: { lookup: (key) => airline.findByKey(key) },
 *   });
 *   const model = durableModel(ctx, chatModel.bindTools(tools));
 *   const graph = new StateGraph(MessagesAnnotation)
 *     .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
 *     .addNode('tools', new ToolNode(tools))
 *     ...compile();
 *   return (await graph.invoke({ messages })).messages.at(-1)?.text;
 *
 * where `bookFlight` is an ordinary `tool(async (input, config) => airline.book(idempotencyKeyOf(config), input), ...)`.
 *
 * Each model answer is a recorded step: a resumed run does not ask the model again for an answer it
 * recorded. Each tool call is an action (recorded PENDING before the tool runs, with an idempotency key that
 * `idempotencyKeyOf(config)` gives the tool; on resume a PENDING call is recovered through the tool's
 * `lookup`, never run twice); a tool marked `readOnly` is a recorded step instead. Calls are recorded in the
 * order the graph starts them (a ToolNode starts a turn's calls in the model's order), one at a time.
 *
 * A resumed run runs the graph again from its start over the run's journal (recorded answers and tool
 * results come back without being made again): invoke it from the same input, without resuming it from a
 * checkpoint of the interrupted attempt (AgentStateSaver keeps conversations between runs, not within one).
 */
import {
  type BaseMessage,
  mapChatMessagesToStoredMessages,
  mapStoredMessagesToChatMessages,
} from '@langchain/core/messages';
import { type Runnable, type RunnableConfig, RunnableLambda } from '@langchain/core/runnables';
import { type StructuredToolInterface, tool } from '@langchain/core/tools';
import { AgentStateError, invalidRequest } from '../../core/errors.js';
import type { JsonValue } from '../../core/json.js';
import type { Codec } from '../../durable/codec.js';
import type { DurableContext, LookupAnswer } from '../../durable/types.js';
import { modelAnswer, queueOf } from '../shared/durable-calls.js';

/** A message as LangChain stores it (`mapChatMessagesToStoredMessages`): tool calls and metadata kept. */
function messageCodec<M extends BaseMessage>(): Codec<M> {
  return {
    encode: (message) =>
      JSON.parse(JSON.stringify(mapChatMessagesToStoredMessages([message])[0])) as JsonValue,
    decode: (json) => {
      const [message] = mapStoredMessagesToChatMessages([json as never]);
      if (message === undefined) throw new AgentStateError('internal', 'a recorded model answer is empty');
      return message as M;
    },
  };
}

/** What `durableModel` wraps: a chat model, or one with its tools bound (`model.bindTools(tools)`). */
export interface ChatModelLike<I, M extends BaseMessage> {
  invoke(input: I, config?: RunnableConfig): Promise<M>;
}

/**
 * The model with each answer recorded as a step of the run (`name` names the steps, default `model`): a
 * Runnable to `invoke` in the graph's model node.
 */
export function durableModel<I, M extends BaseMessage>(
  ctx: DurableContext,
  model: ChatModelLike<I, M>,
  options: { readonly name?: string } = {},
): Runnable<I, M> {
  const name = options.name ?? 'model';
  const queue = queueOf(ctx);
  const codec = messageCodec<M>();
  return RunnableLambda.from((input: I, config?: RunnableConfig) =>
    queue(() => ctx.step(name, () => modelAnswer(() => model.invoke(input, config)), { codec })),
  );
}

export interface DurableToolOptions {
  /** Whether a call with this key took effect (see `ctx.action`); without it an interrupted call is UNKNOWN. */
  readonly lookup?: (idempotencyKey: string) => Promise<LookupAnswer<JsonValue>>;
  /** No effect on the outside world: a recorded step, made again if the process dies during it. */
  readonly readOnly?: boolean;
}

const KEY = 'agentstate_idempotency_key';

/** The idempotency key of this call, inside a tool wrapped by `durableTools` (from its `config`). */
export function idempotencyKeyOf(config: RunnableConfig | undefined): string {
  const key: unknown = config?.configurable?.[KEY];
  if (typeof key !== 'string')
    throw invalidRequest('idempotencyKeyOf: the tool was not called through durableTools');
  return key;
}

type ToolConfig = RunnableConfig & { readonly toolCall?: { readonly id?: string } };

function wrap(ctx: DurableContext, original: StructuredToolInterface, own: DurableToolOptions) {
  const queue = queueOf(ctx);
  const name = original.name;
  // The tool itself, called with its arguments (not a tool call): it answers its output, not a message.
  const call = (input: unknown, config: ToolConfig | undefined, key: string, signal?: AbortSignal) => {
    const { toolCall: _call, ...rest } = config ?? {};
    const child: RunnableConfig = {
      ...rest,
      ...(signal === undefined ? {} : { signal }),
      configurable: { ...rest.configurable, [KEY]: key },
    };
    return original.invoke(input as never, child) as Promise<JsonValue>;
  };
  return tool(
    (input: unknown, config: ToolConfig) =>
      queue(() => {
        if (own.readOnly === true) {
          const id = config?.toolCall?.id ?? 'call';
          return ctx.step(`tool ${name}`, () => call(input, config, `${ctx.taskId}:${id}`));
        }
        const { lookup } = own;
        return ctx.action(name, input as JsonValue, {
          run: (key, attempt) => call(input, config, key, attempt.signal),
          ...(lookup === undefined ? {} : { lookup }),
        });
      }),
    { name, description: original.description, schema: original.schema as never },
  );
}

/**
 * The tools with each call recorded as an action of the run (or a step, for `readOnly` ones), for a
 * `ToolNode` and for the model's `bindTools`. A tool whose action FAILED throws `ActionFailedError` (a
 * ToolNode tells the model); a tool's output must be JSON (a string, or an object).
 */
export function durableTools<T extends readonly StructuredToolInterface[]>(
  ctx: DurableContext,
  tools: T,
  options: { readonly [name: string]: DurableToolOptions | undefined } = {},
): T {
  return tools.map((t) => wrap(ctx, t, options[t.name] ?? {})) as unknown as T;
}
