import { describe, expect, it } from 'vitest';
import { countMessage, toChatMessage } from '../../src/context/chat-format.js';
import { storedMessageTokens } from '../../src/context/message-tokens.js';
import { loadTokenizer, type Tokenizer } from '../../src/context/tokenizer.js';
import type { Message } from '../../src/core/model.js';

function message(id: string, content: string): Message {
  return {
    id,
    tenant_id: 't',
    user_id: 'u',
    session_id: 'sess_x',
    seq: 1,
    role: 'user',
    content,
    name: null,
    tool_calls: null,
    tool_call_id: null,
    metadata: {},
    created_at: '2026-11-30T00:00:00.000Z',
  };
}

describe('storedMessageTokens', () => {
  it('answers what countMessage answers, and counts a stored message once per tokenizer', async () => {
    const real = await loadTokenizer();
    let calls = 0;
    const counting: Tokenizer = {
      name: real.name,
      count: (text) => {
        calls++;
        return real.count(text);
      },
    };
    const m = message('msg_a', 'I want to book a flight from Paris to Tokyo next Tuesday');
    const expected = countMessage(real, toChatMessage(m));
    expect(storedMessageTokens(counting, m)).toBe(expected);
    const first = calls;
    expect(first).toBeGreaterThan(0);
    expect(storedMessageTokens(counting, m)).toBe(expected);
    expect(calls).toBe(first);
    // Another tokenizer object (even with the same name) counts for itself.
    const other: Tokenizer = { name: real.name, count: (text) => text.length };
    expect(storedMessageTokens(other, m)).toBe(countMessage(other, toChatMessage(m)));
    // Another message id is counted anew.
    expect(storedMessageTokens(counting, message('msg_b', 'hi'))).toBe(
      countMessage(real, toChatMessage(message('msg_b', 'hi'))),
    );
    expect(calls).toBeGreaterThan(first);
  });
});
