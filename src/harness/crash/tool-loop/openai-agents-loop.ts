/**
 * The tool-loop agent written with the OpenAI Agents SDK (`Agent` and `run`, its model a Chat Completions
 * model pointed at the scripted model), made durable by `agentstate/openai-agents`: the same tools as the
 * plain loop, as SDK function tools whose `execute` passes the call's idempotency key on to the downstream.
 */
import { Agent, OpenAIProvider, run, setTracingDisabled, tool } from '@openai/agents';
import { durableModel, durableTools, idempotencyKeyOf } from '../../../adapters/openai-agents/index.js';
import type { JsonValue } from '../../../core/json.js';
import type { DurableContext } from '../../../durable/types.js';
import { type LoopEnv, loopTools, SYSTEM_PROMPT } from './agent.js';
import { TRIP_REQUEST } from './model.js';

setTracingDisabled(true);

export async function openAIAgentsLoop(ctx: DurableContext, env: LoopEnv): Promise<JsonValue> {
  const provider = new OpenAIProvider({ apiKey: 'scripted', baseURL: env.modelUrl, useResponses: false });
  const model = await provider.getModel('scripted');
  const agentTools = loopTools(env);
  const tools = agentTools.map((t) =>
    tool({
      name: t.name,
      description: t.description,
      parameters: { ...t.parameters, type: 'object', properties: t.parameters.properties ?? {} } as never,
      strict: false,
      execute: (input, _run, details) => t.run(input as JsonValue, idempotencyKeyOf(details)),
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
  const agent = new Agent({
    name: 'booker',
    instructions: SYSTEM_PROMPT,
    model: durableModel(ctx, model),
    tools: durableTools(ctx, tools, options),
  });
  const result = await run(agent, TRIP_REQUEST, { maxTurns: 8 });
  const args = new Map<string, string>();
  const calls: JsonValue[] = [];
  for (const item of result.newItems) {
    const raw = item.rawItem;
    if (item.type === 'tool_call_item' && raw.type === 'function_call') args.set(raw.callId, raw.arguments);
    if (item.type === 'tool_call_output_item' && raw.type === 'function_call_result') {
      calls.push({
        name: raw.name,
        arguments: args.get(raw.callId) ?? null,
        result: item.output as JsonValue,
      });
    }
  }
  return JSON.parse(JSON.stringify({ reply: result.finalOutput ?? '', tool_calls: calls })) as JsonValue;
}
