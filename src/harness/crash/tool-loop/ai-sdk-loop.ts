/**
 * The tool-loop agent written with the Vercel AI SDK (`generateText` with tools, against the scripted model
 * through `@ai-sdk/openai-compatible`), made durable by `agentstate/ai-sdk`: the same tools as the plain
 * loop, as AI SDK tools whose `execute` passes the call's idempotency key on to the downstream.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, type ToolSet, tool } from 'ai';
import { durableModel, durableTools, idempotencyKeyOf } from '../../../adapters/ai-sdk/index.js';
import type { JsonValue } from '../../../core/json.js';
import type { DurableContext } from '../../../durable/types.js';
import { type LoopEnv, loopTools, SYSTEM_PROMPT } from './agent.js';
import { TRIP_REQUEST } from './model.js';

export async function aiSdkLoop(ctx: DurableContext, env: LoopEnv): Promise<JsonValue> {
  const provider = createOpenAICompatible({ name: 'scripted', baseURL: env.modelUrl });
  const agentTools = loopTools(env);
  const tools: ToolSet = {};
  const options: Record<string, { lookup?: (key: string) => Promise<never>; readOnly?: boolean }> = {};
  for (const t of agentTools) {
    tools[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema<JsonValue>(t.parameters),
      execute: (input: JsonValue, call) => t.run(input, idempotencyKeyOf(call)),
    });
    const { lookup } = t;
    options[t.name] = {
      readOnly: t.readOnly,
      ...(lookup === undefined ? {} : { lookup: (key: string) => lookup.call(t, key) as Promise<never> }),
    };
  }
  const result = await generateText({
    model: durableModel(ctx, provider.chatModel('scripted')),
    system: SYSTEM_PROMPT,
    prompt: TRIP_REQUEST,
    tools: durableTools(ctx, tools, options),
    stopWhen: stepCountIs(8),
    maxRetries: 0,
  });
  const calls = result.steps.flatMap((step) =>
    step.toolResults.map((r) => ({ name: r.toolName, input: r.input, result: r.output })),
  );
  return JSON.parse(JSON.stringify({ reply: result.text, tool_calls: calls })) as JsonValue;
}
