/**
 * The chat format a model call receives (OpenAI Chat Completions shape), and the token cost of each
 * message in it.
 *
 * Cost of a message, following OpenAI's published accounting for chat models: 3 tokens of framing, the
 * role, the content, 1 more plus the name when a name is set; a tool call costs its id, name and
 * arguments plus 3 of framing; a tool result costs its tool_call_id. A whole request adds 3 tokens that
 * prime the reply. The builder's `token_count` is exactly `countChat(tokenizer, system, messages)`.
 */
import type { Message, MessageRole } from '../core/model.js';
import type { Tokenizer } from './tokenizer.js';

export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const TOKENS_PER_TOOL_CALL = 3;
export const REPLY_PRIMING_TOKENS = 3;

export interface ChatToolCall {
  readonly id: string;
  readonly type: 'function';
  readonly function: { readonly name: string; readonly arguments: string };
}

export interface ChatMessage {
  readonly role: MessageRole;
  readonly content: string;
  readonly name?: string;
  readonly tool_calls?: readonly ChatToolCall[];
  readonly tool_call_id?: string;
}

/** A stored message as the model sees it: no ids, seqs or metadata. */
export function toChatMessage(message: Message): ChatMessage {
  const out: {
    role: MessageRole;
    content: string;
    name?: string;
    tool_calls?: ChatToolCall[];
    tool_call_id?: string;
  } = { role: message.role, content: message.content };
  if (message.name) out.name = message.name;
  if (message.tool_calls && message.tool_calls.length > 0) {
    out.tool_calls = message.tool_calls.map((call) => ({
      id: call.id,
      type: 'function' as const,
      function: {
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
      },
    }));
  }
  if (message.tool_call_id) out.tool_call_id = message.tool_call_id;
  return out;
}

export function countMessage(tokenizer: Tokenizer, message: ChatMessage): number {
  let n = TOKENS_PER_MESSAGE + tokenizer.count(message.role) + tokenizer.count(message.content);
  if (message.name) n += TOKENS_PER_NAME + tokenizer.count(message.name);
  for (const call of message.tool_calls ?? []) {
    n +=
      TOKENS_PER_TOOL_CALL +
      tokenizer.count(call.id) +
      tokenizer.count(call.function.name) +
      tokenizer.count(call.function.arguments);
  }
  if (message.tool_call_id) n += tokenizer.count(message.tool_call_id);
  return n;
}

/** The tokens of one request: the system message (when not empty), the messages, and the reply priming. */
export function countChat(tokenizer: Tokenizer, system: string, messages: readonly ChatMessage[]): number {
  let n = REPLY_PRIMING_TOKENS;
  if (system !== '') n += countMessage(tokenizer, { role: 'system', content: system });
  for (const message of messages) n += countMessage(tokenizer, message);
  return n;
}

/** The request a Chat Completions endpoint takes: the system message first, then the window. */
export function toChatRequestMessages(system: string, messages: readonly ChatMessage[]): ChatMessage[] {
  return system === '' ? [...messages] : [{ role: 'system', content: system }, ...messages];
}
