/**
 * SDK items as session messages. Each item is one message: a readable role and text (so agentstate's
 * context builder, inspector and CLI show the conversation), and the item itself, whole, in
 * `metadata.item` (so `getItems` returns exactly what was added).
 */
import type { AgentInputItem } from '@openai/agents';
import { invalidRequest } from '../../core/errors.js';
import { assertPlainJson, type JsonObject } from '../../core/json.js';
import type { Message, MessageRole } from '../../core/model.js';
import type { NewMessage } from '../../store/types.js';

/** Items that answer a call by `callId`: sent without their call, a model API refuses the request. */
const RESULT_TYPES = new Set([
  'function_call_result',
  'computer_call_result',
  'shell_call_output',
  'apply_patch_call_output',
]);

type Loose = Record<string, unknown>;

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part) => {
      const p = part as Loose;
      if (typeof p?.text === 'string') return p.text;
      if (typeof p?.refusal === 'string') return p.refusal;
      return '';
    })
    .join('');
}

function roleOf(item: Loose): MessageRole {
  if (item.type === undefined || item.type === 'message') {
    if (item.role === 'user') return 'user';
    if (item.role === 'system' || item.role === 'developer') return 'system';
    return 'assistant';
  }
  return RESULT_TYPES.has(String(item.type)) ? 'tool' : 'assistant';
}

/** Refuses (before anything is stored) an item that is not plain JSON, naming where. */
export function checkItems(items: readonly AgentInputItem[], path: string): void {
  if (!Array.isArray(items)) throw invalidRequest(`[openai-agents] ${path} must be an array of items`);
  items.forEach((item, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw invalidRequest(`[openai-agents] ${path}[${i}] must be an item object`);
    }
    assertPlainJson(item, `${path}[${i}]`);
  });
}

export function toMessage(item: AgentInputItem): NewMessage {
  const loose = item as unknown as Loose;
  const role = roleOf(loose);
  const metadata: JsonObject = { item: structuredClone(item) as unknown as JsonObject };
  const callId = typeof loose.callId === 'string' ? loose.callId : null;
  const name = typeof loose.name === 'string' ? loose.name : null;
  if (loose.type === 'function_call' && callId !== null && name !== null) {
    const args = typeof loose.arguments === 'string' ? loose.arguments : '';
    return { role, content: '', tool_calls: [{ id: callId, name, arguments: args }], metadata };
  }
  if (role === 'tool') {
    const output = loose.output;
    const content = typeof output === 'string' ? output : textOf(output) || JSON.stringify(output ?? null);
    return { role, content, tool_call_id: callId, name, metadata };
  }
  return { role, content: textOf(loose.content), metadata };
}

/** The item a message holds; a message written by something else becomes a plain message item. */
export function toItem(message: Message): AgentInputItem | null {
  const stored = message.metadata.item;
  if (typeof stored === 'object' && stored !== null && !Array.isArray(stored)) {
    return stored as unknown as AgentInputItem;
  }
  if (message.role === 'user' || message.role === 'system') {
    return { role: message.role, content: message.content } as AgentInputItem;
  }
  if (message.role === 'assistant') {
    return {
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: message.content }],
    } as AgentInputItem;
  }
  return null;
}

/**
 * Removes results whose call is not in the window (a window cut in the middle of a tool exchange), so the
 * items handed to a model never start with, or hold, an answer to a call it cannot see.
 */
export function withoutOrphanResults(items: AgentInputItem[]): AgentInputItem[] {
  const calls = new Set<string>();
  const out: AgentInputItem[] = [];
  for (const item of items) {
    const loose = item as unknown as Loose;
    const type = String(loose.type ?? 'message');
    const callId = typeof loose.callId === 'string' ? loose.callId : null;
    if (RESULT_TYPES.has(type)) {
      if (callId === null || !calls.has(callId)) continue;
    } else if (callId !== null) {
      calls.add(callId);
    }
    out.push(item);
  }
  return out;
}
