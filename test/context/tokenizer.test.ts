import { describe, expect, it } from 'vitest';
import {
  countChat,
  countMessage,
  REPLY_PRIMING_TOKENS,
  TOKENS_PER_MESSAGE,
  toChatMessage,
  toChatRequestMessages,
} from '../../src/context/chat-format.js';
import { encodingForModel, loadTokenizer } from '../../src/context/tokenizer.js';
import { msg } from './fixtures.js';

describe('tokenizer', () => {
  it('counts with the real encodings, which differ', async () => {
    const o200k = await loadTokenizer('o200k_base');
    const cl100k = await loadTokenizer('cl100k_base');
    expect(o200k.name).toBe('o200k_base');
    expect(cl100k.name).toBe('cl100k_base');
    expect(o200k.count('hello world')).toBe(2);
    expect(cl100k.count('hello world')).toBe(2);
    const chinese = '我们之前聊过上下文窗口，它决定了模型在一次推理中能够看到哪些信息。';
    expect(o200k.count(chinese)).not.toBe(cl100k.count(chinese));
    expect(o200k.count('')).toBe(0);
  });

  it('selects the encoding by model name', async () => {
    expect(encodingForModel('gpt-4o-mini')).toBe('o200k_base');
    expect(encodingForModel('gpt-4.1')).toBe('o200k_base');
    expect(encodingForModel('o3-mini')).toBe('o200k_base');
    expect(encodingForModel('gpt-4')).toBe('cl100k_base');
    expect(encodingForModel('gpt-3.5-turbo')).toBe('cl100k_base');
    expect((await loadTokenizer('gpt-4')).name).toBe('cl100k_base');
    expect(await loadTokenizer('gpt-4o')).toBe(await loadTokenizer('o200k_base'));
  });

  it('counts special-token text as plain text instead of throwing', async () => {
    const tok = await loadTokenizer();
    expect(tok.count('say <|endoftext|> now')).toBeGreaterThan(3);
  });

  it('refuses an empty tokenizer name', async () => {
    await expect(loadTokenizer('')).rejects.toMatchObject({ code: 'invalid_request' });
  });
});

describe('chat format and message cost', () => {
  it('charges framing, role, content, name, tool calls and tool_call_id', async () => {
    const tok = await loadTokenizer();
    const plain = toChatMessage(msg(1, 'user', 'I want business class'));
    expect(countMessage(tok, plain)).toBe(
      TOKENS_PER_MESSAGE + tok.count('user') + tok.count('I want business class'),
    );
    const named = toChatMessage(msg(2, 'user', 'hi', { name: 'alice' }));
    expect(countMessage(tok, named)).toBe(
      TOKENS_PER_MESSAGE + tok.count('user') + tok.count('hi') + 1 + tok.count('alice'),
    );
    const call = toChatMessage(
      msg(3, 'assistant', '', {
        tool_calls: [{ id: 'call_1', name: 'airline.search', arguments: { to: 'NRT' } }],
      }),
    );
    expect(call.tool_calls?.[0]?.function.arguments).toBe('{"to":"NRT"}');
    expect(countMessage(tok, call)).toBe(
      TOKENS_PER_MESSAGE +
        tok.count('assistant') +
        3 +
        tok.count('call_1') +
        tok.count('airline.search') +
        tok.count('{"to":"NRT"}'),
    );
    const result = toChatMessage(msg(4, 'tool', '{"flights":[]}', { tool_call_id: 'call_1' }));
    expect(result.tool_call_id).toBe('call_1');
    expect(countMessage(tok, result)).toBe(
      TOKENS_PER_MESSAGE + tok.count('tool') + tok.count('{"flights":[]}') + tok.count('call_1'),
    );
  });

  it('keeps only what a model sees, and puts the system message first', () => {
    const chat = toChatMessage(msg(9, 'user', 'x'));
    expect(Object.keys(chat).sort()).toEqual(['content', 'role']);
    expect(toChatRequestMessages('sys', [chat])[0]).toEqual({ role: 'system', content: 'sys' });
    expect(toChatRequestMessages('', [chat])).toEqual([chat]);
  });

  it('a request is the sum of its messages plus the reply priming', async () => {
    const tok = await loadTokenizer();
    const a = toChatMessage(msg(1, 'user', 'one'));
    const b = toChatMessage(msg(2, 'assistant', 'two'));
    expect(countChat(tok, '', [])).toBe(REPLY_PRIMING_TOKENS);
    expect(countChat(tok, 'sys', [a, b])).toBe(
      REPLY_PRIMING_TOKENS +
        countMessage(tok, { role: 'system', content: 'sys' }) +
        countMessage(tok, a) +
        countMessage(tok, b),
    );
  });
});
