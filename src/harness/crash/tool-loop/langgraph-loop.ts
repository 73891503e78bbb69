/**
 * The tool-loop agent written with LangGraph.js (a `StateGraph` over `MessagesAnnotation`: an agent node
 * that asks the model, a `ToolNode`, `toolsCondition` between them), made durable by `agentstate/langgraph`:
 * the same tools as the plain loop, as LangChain tools whose function passes the call's idempotency key on
 * to the downstream. The model is a small Chat Completions client for the scripted model.
 */
import {
  AIMessage,
  type BaseMessage,
  HumanMessage,
  isAIMessage,
  SystemMessage,
  type ToolMessage,
} from '@langchain/core/messages';
import { RunnableLambda } from '@langchain/core/runnables';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { durableModel, durableTools, idempotencyKeyOf } from '../../../adapters/langgraph/index.js';
import type { AgentTool } from '../../../agents/tool-loop.js';
import type { JsonObject, JsonValue } from '../../../core/json.js';
import type { DurableContext } from '../../../durable/types.js';
import { chatCompletion } from '../../../models/openai/client.js';
import { type LoopEnv, loopTools, SYSTEM_PROMPT } from './agent.js';
import { TRIP_REQUEST } from './model.js';

function text(content: BaseMessage['content']): string {
  return typeof content === 'string' ? content : JSON.stringify(content);
}

/** A LangChain message as a Chat Completions message. */
function toChat(message: BaseMessage): JsonObject {
  const type = message.getType();
  if (type === 'system') return { role: 'system', content: text(message.content) };
  if (type === 'human') return { role: 'user', content: text(message.content) };
  if (type === 'tool') {
    const { tool_call_id } = message as ToolMessage;
    return { role: 'tool', tool_call_id, content: text(message.content) };
  }
  const calls = isAIMessage(message) ? (message.tool_calls ?? []) : [];
  return {
    role: 'assistant',
    content: text(message.content) === '' ? null : text(message.content),
    ...(calls.length === 0
      ? {}
      : {
          tool_calls: calls.map((c) => ({
            id: c.id ?? '',
            type: 'function',
            function: { name: c.name, arguments: JSON.stringify(c.args) },
          })),
        }),
  };
}

/** A chat model over a Chat Completions endpoint, with these tools bound (as the model sees them). */
export function chatModel(
  baseURL: string,
  tools: readonly Pick<AgentTool, 'name' | 'description' | 'parameters'>[],
  options: { readonly model?: string; readonly apiKey?: string } = {},
) {
  const specs = tools.map((t) => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }));
  return RunnableLambda.from(async (messages: BaseMessage[]) => {
    const answer = await chatCompletion(
      {
        baseURL,
        model: options.model ?? 'scripted',
        maxRetries: 0,
        ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
      },
      { messages: messages.map(toChat), tools: specs, tool_choice: 'auto' },
    );
    return new AIMessage({
      content: typeof answer.content === 'string' ? answer.content : '',
      tool_calls: (answer.tool_calls ?? []).map((c, index) => ({
        id: c.id ?? `call_${index}`,
        name: c.function.name,
        args: JSON.parse(c.function.arguments === '' ? '{}' : c.function.arguments) as Record<
          string,
          unknown
        >,
        type: 'tool_call' as const,
      })),
    });
  });
}

export async function langGraphLoop(ctx: DurableContext, env: LoopEnv): Promise<JsonValue> {
  const agentTools = loopTools(env);
  const plain = agentTools.map((t) =>
    tool((input: unknown, config) => t.run(input as JsonValue, idempotencyKeyOf(config)), {
      name: t.name,
      description: t.description,
      schema: t.parameters as never,
    }),
  );
  const options = Object.fromEntries(
    agentTools.map((t) => {
      const { lookup } = t;
      return [
        t.name,
        {
          readOnly: t.readOnly,
          ...(lookup === undefined ? {} : { lookup: (key: string) => lookup.call(t, key) }),
        },
      ];
    }),
  );
  const tools = durableTools(ctx, plain, options);
  const model = durableModel(ctx, chatModel(env.modelUrl, agentTools));
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile();
  const { messages } = await graph.invoke(
    { messages: [new SystemMessage(SYSTEM_PROMPT), new HumanMessage(TRIP_REQUEST)] },
    { recursionLimit: 20 },
  );
  const args = new Map<string, string>();
  const calls: JsonValue[] = [];
  for (const message of messages) {
    if (isAIMessage(message))
      for (const c of message.tool_calls ?? []) args.set(c.id ?? '', JSON.stringify(c.args));
    if (message.getType() === 'tool') {
      const { tool_call_id, name } = message as ToolMessage;
      calls.push({
        name: name ?? null,
        arguments: args.get(tool_call_id) ?? null,
        result: JSON.parse(text(message.content)) as JsonValue,
      });
    }
  }
  const reply = messages.at(-1);
  return JSON.parse(
    JSON.stringify({ reply: reply === undefined ? '' : text(reply.content), tool_calls: calls }),
  ) as JsonValue;
}
