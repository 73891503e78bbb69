/**
 * A tool-calling agent in plain code, on durable runs: a model behind any OpenAI-compatible Chat
 * Completions endpoint is asked in a loop; each of its answers is a recorded step, and each tool call it
 * asks for is an action with an idempotency key (and the tool's `lookup`). Run inside `durableRun`, a loop
 * killed anywhere continues where it stopped: the model is not asked again for an answer it gave, and a
 * tool's effect happens once.
 *
 * A tool marked `readOnly` (a search, a read: nothing to do twice) is a recorded step instead of an action:
 * if the process dies during the call, it is simply made again.
 *
 * Arguments the model gives that are not JSON, or that the tool's schema refuses, never reach the tool:
 * the model is told what was wrong, as the tool's result. A tool whose action FAILS (the downstream
 * refused) is reported to the model the same way; the loop goes on.
 */
import { z } from 'zod';
import { invalidRequest } from '../core/errors.js';
import { assertPlainJsonObject, type JsonObject, type JsonValue } from '../core/json.js';
import { ActionFailedError } from '../durable/signals.js';
import type { ActionCall, DurableContext, LookupAnswer } from '../durable/types.js';
import type { OpenAIConfig } from '../models/openai/client.js';
import { toolChat } from '../models/openai/tool-chat.js';
import type { ToolChatAnswer, ToolChatRequest } from '../models/types.js';

/** A tool the model may call: what it sees (name, description, the JSON Schema of its parameters) and what runs. */
export interface AgentTool {
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the parameters, as the model sees it. */
  readonly parameters: JsonObject;
  /** No effect on the outside world: called as a recorded step, not an action. */
  readonly readOnly: boolean;
  /** The parameters checked against the tool's schema: null when valid, else what is wrong. */
  check(args: JsonValue): string | null;
  /** The name its calls are recorded under as actions (default `name`). */
  readonly action?: string;
  run(args: JsonValue, idempotencyKey: string, call?: ActionCall): Promise<JsonValue>;
  lookup?(idempotencyKey: string): Promise<LookupAnswer<JsonValue>>;
}

export interface AgentToolSpec<P> {
  /** 1 to 64 letters, digits, `_` or `-` (what Chat Completions accepts as a function name). */
  readonly name: string;
  readonly description: string;
  readonly parameters: z.ZodType<P>;
  /** True for a tool with no effect (a search): a call cut short by a crash is made again. Default false. */
  readonly readOnly?: boolean;
  /** The name its calls are recorded under as actions (default `name`). */
  readonly action?: string;
  /** Performs the call; pass `idempotencyKey` on to the downstream (and `call.signal`, when given). */
  run(params: P, idempotencyKey: string, call?: ActionCall): Promise<JsonValue>;
  /** Whether a call with this key took effect (see `ctx.action`). */
  lookup?(idempotencyKey: string): Promise<LookupAnswer<JsonValue>>;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function issueText(error: z.ZodError): string {
  const issue = error.issues[0];
  const where = issue?.path.map(String).join('.') || '(arguments)';
  return `${where}: ${issue?.message ?? 'invalid'}`;
}

/** A tool from its zod schema: the model sees the schema's JSON Schema; `run` gets the parsed parameters. */
export function defineAgentTool<P>(spec: AgentToolSpec<P>): AgentTool {
  if (!TOOL_NAME.test(spec.name))
    throw invalidRequest(`tool name ${JSON.stringify(spec.name)}: ${TOOL_NAME}`);
  const schema: unknown = JSON.parse(JSON.stringify(z.toJSONSchema(spec.parameters)));
  assertPlainJsonObject(schema, `tool ${spec.name} parameters`);
  const { $schema: _dialect, ...parameters } = schema;
  const { lookup } = spec;
  return {
    name: spec.name,
    ...(spec.action === undefined ? {} : { action: spec.action }),
    description: spec.description,
    parameters,
    readOnly: spec.readOnly === true,
    check: (args) => {
      const parsed = spec.parameters.safeParse(args);
      return parsed.success ? null : issueText(parsed.error);
    },
    run: async (args, key, call) => {
      const parsed = spec.parameters.safeParse(args);
      if (!parsed.success) throw invalidRequest(`tool ${spec.name}: ${issueText(parsed.error)}`);
      return spec.run(parsed.data, key, call);
    },
    ...(lookup === undefined ? {} : { lookup: (key: string) => lookup(key) }),
  };
}

/** One answer of the model, as recorded: its text and the tool calls it asks for. */
const AnswerSchema = z.object({
  content: z.string().nullable(),
  tool_calls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })),
});
export type ModelAnswer = z.infer<typeof AnswerSchema>;

export interface ToolCallRecord {
  readonly name: string;
  readonly arguments: string;
  readonly result: JsonValue;
}

/** A model that calls tools (a `Model` with `chat`). */
export interface ToolCaller {
  chat(request: ToolChatRequest): Promise<ToolChatAnswer>;
}

export interface ToolLoopOptions {
  /** The Chat Completions endpoint and model, or a model that calls tools. */
  readonly model: OpenAIConfig | ToolCaller;
  readonly system: string;
  /** The conversation before the request (Chat Completions messages: user and assistant turns). */
  readonly history?: readonly JsonObject[];
  /** The user's request. */
  readonly input: string;
  /** Each piece of the model's text as it arrives (not called again for answers a resumed run replays). */
  readonly onDelta?: (text: string) => void;
  readonly tools: readonly AgentTool[];
  /** Model answers at most (default 8); a loop that has not finished by then fails. */
  readonly maxSteps?: number;
}

/** The model was still asking for tools after the loop's last allowed answer. */
export class ToolLoopExhausted extends Error {
  constructor(
    readonly maxSteps: number,
    /** The calls made before the loop gave up. */
    readonly toolCalls: readonly ToolCallRecord[],
  ) {
    super(`the model did not finish within ${maxSteps} answers`);
    this.name = 'ToolLoopExhausted';
  }
}

export interface ToolLoopResult {
  readonly reply: string;
  readonly tool_calls: ToolCallRecord[];
}

function parseArguments(text: string): { value: JsonValue } | { error: string } {
  try {
    const value: unknown = JSON.parse(text === '' ? '{}' : text);
    assertPlainJsonObject(value, 'arguments');
    return { value };
  } catch (error) {
    return {
      error: `the arguments are not a JSON object: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

/** Asks the model and records its answer (normalized: text, and tool calls with ids). */
async function ask(
  ctx: DurableContext,
  options: ToolLoopOptions,
  messages: JsonObject[],
): Promise<ModelAnswer> {
  const tools = options.tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  const { model, onDelta } = options;
  const request = { messages, tools, ...(onDelta === undefined ? {} : { onDelta }) };
  return ctx.step(
    'model',
    (): Promise<ModelAnswer> => ('chat' in model ? model.chat(request) : toolChat(model, request)),
    { schema: AnswerSchema },
  );
}

/** Calls one tool the model asked for, as an action; what goes wrong is told to the model as the result. */
async function callTool(
  ctx: DurableContext,
  tools: readonly AgentTool[],
  call: ModelAnswer['tool_calls'][number],
) {
  const tool = tools.find((t) => t.name === call.name);
  if (tool === undefined) return { error: `there is no tool named ${call.name}` };
  const args = parseArguments(call.arguments);
  if ('error' in args) return { error: args.error };
  const wrong = tool.check(args.value);
  if (wrong !== null) return { error: `invalid arguments: ${wrong}` };
  if (tool.readOnly)
    return ctx.step(`tool ${tool.name}`, () => tool.run(args.value, `${ctx.taskId}:${call.id}`));
  const { lookup } = tool;
  try {
    return await ctx.action(tool.action ?? tool.name, args.value, {
      run: (key, attempt) => tool.run(args.value, key, attempt),
      ...(lookup === undefined ? {} : { lookup: (key: string) => lookup.call(tool, key) }),
    });
  } catch (error) {
    if (error instanceof ActionFailedError) return { error: `${error.code}: ${error.message}` };
    throw error;
  }
}

/** Runs the loop inside a durable run: model, tool calls, model, ... until the model answers in text. */
export async function runToolLoop(ctx: DurableContext, options: ToolLoopOptions): Promise<ToolLoopResult> {
  const maxSteps = options.maxSteps ?? 8;
  if (!Number.isInteger(maxSteps) || maxSteps < 1)
    throw invalidRequest('maxSteps: must be a positive whole number');
  const messages: JsonObject[] = [
    { role: 'system', content: options.system },
    ...(options.history ?? []).map((message) => ({ ...message })),
    { role: 'user', content: options.input },
  ];
  const calls: ToolCallRecord[] = [];
  for (let step = 0; step < maxSteps; step++) {
    const answer = await ask(ctx, options, messages);
    if (answer.tool_calls.length === 0) return { reply: answer.content ?? '', tool_calls: calls };
    messages.push({
      role: 'assistant',
      content: answer.content,
      tool_calls: answer.tool_calls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    });
    for (const call of answer.tool_calls) {
      const result = await callTool(ctx, options.tools, call);
      calls.push({ name: call.name, arguments: call.arguments, result });
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(result) });
    }
  }
  throw new ToolLoopExhausted(maxSteps, calls);
}
