/**
 * The messages of one Chat Completions call: the built context's system text and conversation (from
 * `buildContext`, when the runtime gives one) around the call's own instructions and the user's input.
 */
import type { JsonObject } from '../../core/json.js';
import type { ConversationContext } from '../types.js';

export function withConversation(
  context: ConversationContext | undefined,
  instructions: string,
  user: string,
): JsonObject[] {
  if (context === undefined) {
    return [
      { role: 'system', content: instructions },
      { role: 'user', content: user },
    ];
  }
  const system = context.system === '' ? instructions : `${context.system}\n\n${instructions}`;
  return [
    { role: 'system', content: system },
    ...context.messages.map((message) => ({ ...message }) as unknown as JsonObject),
    { role: 'user', content: user },
  ];
}
