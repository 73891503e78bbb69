/**
 * RepeatSkipper: what a follower of a resumed durable chat turn skips of the new stream (what it sent of the
 * dead one), with text batched at other places, and where the new stream says something else.
 */
import type { UIMessageChunk } from 'ai';
import { describe, expect, it } from 'vitest';
import { RepeatSkipper } from '../../../src/adapters/ai-sdk/chat-repeat.js';

const text = (delta: string): UIMessageChunk => ({ type: 'text-delta', id: 't0', delta });

describe('RepeatSkipper', () => {
  it('skips what was sent, whatever the batches, and passes the rest', () => {
    const skipper = new RepeatSkipper([
      { type: 'start', messageId: 'm1' },
      { type: 'text-start', id: 't0' },
      text('Hel'),
      text('lo wo'),
    ]);
    const taken = [
      { type: 'start', messageId: 'm1' } as const,
      { type: 'text-start', id: 't0' } as const,
      text('He'),
      text('llo world'),
      { type: 'text-end', id: 't0' } as const,
    ].map((chunk) => skipper.take(chunk));
    expect(taken).toEqual([null, null, null, text('rld'), { type: 'text-end', id: 't0' }]);
  });

  it('says when the new stream differs from what was sent', () => {
    const skipper = new RepeatSkipper([{ type: 'text-start', id: 't0' }, text('Hello')]);
    expect(skipper.take({ type: 'text-start', id: 't0' })).toBeNull();
    expect(skipper.take(text('Hi there'))).toBe('diverged');
    const other = new RepeatSkipper([{ type: 'start', messageId: 'm1' }]);
    expect(other.take({ type: 'start', messageId: 'm2' })).toBe('diverged');
  });
});
