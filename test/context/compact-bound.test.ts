/**
 * The compaction check without a caller's tokenizer decides with UTF-8 bytes (an upper bound of the tokens)
 * and loads the real encoding only for a history the bound puts over the threshold. This file runs in a
 * process of its own (vitest forks a worker per file), so "not loaded" means not loaded by these tests.
 */
import { describe, expect, it } from 'vitest';
import { maybeCompact } from '../../src/context/compact.js';
import { storedMessageTokens } from '../../src/context/message-tokens.js';
import { readSummaryHead } from '../../src/context/summary-store.js';
import { ENCODINGS, loadedTokenizer, loadTokenizer, UTF8_BYTES_BOUND } from '../../src/context/tokenizer.js';
import { openStore } from '../../src/store/open.js';
import { appendAll, chatTurns, freshScope } from './stores.js';

const TEXTS = [
  '',
  'hello world',
  'I want to book a flight from Beijing to Shanghai on 2027-03-04, business class please',
  '我想订一张从北京到上海的机票，三月四日，商务舱',
  'emoji 👩‍👩‍👧‍👦🛫 and accents: déjà vu, naïve, Ærøskøbing',
  '<|endoftext|><|im_start|> special-token text counted as text',
  '    indented\n\n\ttabs\r\n and    spaces   ',
  'x'.repeat(5000),
  '{"slots":{"origin":"Paris","destination":"Tokyo"},"cabin":"first"}',
];

describe('the compaction check without a tokenizer', () => {
  it('decides a short history with the bound, never loading an encoding, and compacts a long one exactly', async () => {
    const store = await openStore('memory:');
    try {
      const scope = freshScope();
      const short = await store.createSession(scope, {});
      await appendAll(store, scope, short.id, chatTurns(3));
      expect(loadedTokenizer()).toBeNull();
      expect(await maybeCompact({ store, scope, sessionId: short.id, thresholdTokens: 5000 })).toBeNull();
      // Again with growth known: still nothing to load.
      expect(await maybeCompact({ store, scope, sessionId: short.id, thresholdTokens: 5000 })).toBeNull();
      expect(loadedTokenizer()).toBeNull();

      // Over the bound but under the exact count: the encoding is loaded and nothing is compacted.
      const exactOnly = await store.createSession(scope, {});
      await appendAll(store, scope, exactOnly.id, chatTurns(3));
      const messages = await store.listMessages(scope, exactOnly.id, { limit: 100 });
      const bound = messages.reduce((n, m) => n + storedMessageTokens(UTF8_BYTES_BOUND, m), 0);
      const threshold = Math.floor(bound * 0.8);
      expect(
        await maybeCompact({ store, scope, sessionId: exactOnly.id, thresholdTokens: threshold }),
      ).toBeNull();
      const loaded = loadedTokenizer();
      expect(loaded?.name).toBe('o200k_base');
      expect(await readSummaryHead(store, scope, exactOnly.id)).toBeNull();
      // The threshold was between the two counts: the bound alone would have compacted.
      const exact = messages.reduce((n, m) => n + storedMessageTokens(loaded!, m), 0);
      expect(exact).toBeLessThanOrEqual(threshold);
      expect(bound).toBeGreaterThan(threshold);

      // A long history compacts as with the encoding given.
      const long = await store.createSession(scope, {});
      const twin = await store.createSession(scope, {});
      await appendAll(store, scope, long.id, chatTurns(30));
      await appendAll(store, scope, twin.id, chatTurns(30));
      const tokenizer = await loadTokenizer();
      const withBound = await maybeCompact({ store, scope, sessionId: long.id, thresholdTokens: 600 });
      const withExact = await maybeCompact({
        store,
        scope,
        sessionId: twin.id,
        thresholdTokens: 600,
        tokenizer,
      });
      expect(withBound).not.toBeNull();
      expect(withBound?.to_seq).toBe(withExact?.to_seq);
      expect(withBound?.points).toEqual(withExact?.points);
    } finally {
      await store.close();
    }
  });
});

describe('UTF8_BYTES_BOUND', () => {
  it('is never below the count of either encoding', async () => {
    for (const name of ENCODINGS) {
      const exact = await loadTokenizer(name);
      for (const text of TEXTS) {
        expect(UTF8_BYTES_BOUND.count(text)).toBeGreaterThanOrEqual(exact.count(text));
      }
    }
  });
});
