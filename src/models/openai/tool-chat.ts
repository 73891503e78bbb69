/**
 * One answer of a Chat Completions endpoint to a conversation that offers tools (`tool_choice: auto`):
 * its text (streamed piece by piece when asked) and the tool calls it asks for, each with an id.
 */
import type { JsonObject } from '../../core/json.js';
import type { ToolChatAnswer, ToolChatRequest } from '../types.js';
import { chatCompletion, type OpenAIConfig } from './client.js';

export async function toolChat(
  config: OpenAIConfig,
  request: ToolChatRequest,
  body: JsonObject = {},
): Promise<ToolChatAnswer> {
  const tools = request.tools.map((tool) => ({
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  }));
  const message = await chatCompletion(
    config,
    {
      ...body,
      messages: request.messages.map((message) => ({ ...message })),
      ...(tools.length === 0 ? {} : { tools, tool_choice: 'auto' }),
    },
    request.onDelta === undefined ? {} : { onDelta: request.onDelta },
  );
  return {
    content: typeof message.content === 'string' ? message.content : null,
    tool_calls: (message.tool_calls ?? []).map((call, index) => ({
      id: call.id ?? `call_${index}`,
      name: call.function.name,
      arguments: call.function.arguments,
    })),
  };
}
