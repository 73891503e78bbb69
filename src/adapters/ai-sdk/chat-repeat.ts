/**
 * A follower's view of a stream that another stream continues (a durable turn resumed after its writer
 * died): the new stream replays the answer from its first chunk, and a follower that already sent part of
 * the old one to its client skips what it sent. Text and reasoning deltas are compared by their text, so
 * batches cut at other places still match; any other chunk must be the same. A replay that says something
 * else than what was sent (a model answer that was not recorded yet, asked again) is a divergence: the
 * follower cannot take back what its client has, and ends.
 */
import type { UIMessageChunk } from 'ai';
import { canonicalJson, type JsonValue } from '../../core/json.js';

type DeltaChunk = Extract<UIMessageChunk, { type: 'text-delta' | 'reasoning-delta' }>;

function isDelta(chunk: UIMessageChunk): chunk is DeltaChunk {
  return chunk.type === 'text-delta' || chunk.type === 'reasoning-delta';
}

export class RepeatSkipper {
  private readonly expected: UIMessageChunk[];

  /** `sent`: every chunk the follower sent, in order. */
  constructor(sent: readonly UIMessageChunk[]) {
    this.expected = [...sent];
  }

  /** What of `chunk` was not sent yet (null: all of it was), or `diverged`. */
  take(chunk: UIMessageChunk): UIMessageChunk | null | 'diverged' {
    let rest = chunk;
    for (;;) {
      if (isDelta(rest) && rest.delta === '') return null;
      const head = this.expected[0];
      if (head === undefined) return rest;
      if (isDelta(head) && head.delta === '') {
        this.expected.shift();
        continue;
      }
      if (isDelta(rest) && isDelta(head) && rest.type === head.type && rest.id === head.id) {
        if (head.delta.startsWith(rest.delta)) {
          this.expected[0] = { ...head, delta: head.delta.slice(rest.delta.length) };
          return null;
        }
        if (!rest.delta.startsWith(head.delta)) return 'diverged';
        this.expected.shift();
        rest = { ...rest, delta: rest.delta.slice(head.delta.length) };
        continue;
      }
      if (canonicalJson(rest as unknown as JsonValue) !== canonicalJson(head as unknown as JsonValue))
        return 'diverged';
      this.expected.shift();
      return null;
    }
  }
}
