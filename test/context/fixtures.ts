/** Message records built in memory, for the pure window and summarizer tests. */
import type { Message, ToolCall } from '../../src/core/model.js';

let counter = 0;

export function msg(
  seq: number,
  role: Message['role'],
  content: string,
  extra: { tool_calls?: ToolCall[]; tool_call_id?: string; name?: string } = {},
): Message {
  counter++;
  return {
    id: `msg_test${counter}`,
    tenant_id: 't',
    user_id: 'u',
    session_id: 'sess_test',
    seq,
    role,
    content,
    name: extra.name ?? null,
    tool_calls: extra.tool_calls ?? null,
    tool_call_id: extra.tool_call_id ?? null,
    metadata: {},
    created_at: '2026-01-01T00:00:00.000Z',
  };
}

/** Renumbers a list of messages 1..n. */
export function numbered(list: Omit<Message, 'seq'>[]): Message[] {
  return list.map((m, i) => ({ ...m, seq: i + 1 }));
}

/** A cost function that charges the content length, so budgets are easy to reason about. */
export const lengthCost = (m: Message): number => m.content.length + 1;
