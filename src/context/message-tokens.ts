/**
 * Token counts of stored messages, remembered by message id: a stored message never changes, and the
 * compaction check after every turn counts the same newest messages again and again. Kept per tokenizer
 * object and bounded (the oldest entries go first).
 */
import type { Message } from '../core/model.js';
import { RecentMap } from '../core/recent-map.js';
import { countMessage, toChatMessage } from './chat-format.js';
import type { Tokenizer } from './tokenizer.js';

const MAX_ENTRIES = 20_000;
const byTokenizer = new WeakMap<Tokenizer, RecentMap<string, number>>();

/** The tokens of a stored message as a chat message (what countMessage(toChatMessage(m)) gives). */
export function storedMessageTokens(tokenizer: Tokenizer, message: Message): number {
  let counts = byTokenizer.get(tokenizer);
  if (counts === undefined) {
    counts = new RecentMap(MAX_ENTRIES);
    byTokenizer.set(tokenizer, counts);
  }
  const key = `${message.tenant_id}\u0000${message.id}`;
  const known = counts.get(key);
  if (known !== undefined) return known;
  const n = countMessage(tokenizer, toChatMessage(message));
  counts.set(key, n);
  return n;
}
