/**
 * The compaction check without a caller's tokenizer decides with UTF-8 bytes (an upper bound of the tokens)
 * and loads the real encoding only for a history the bound puts over the threshold. Vitest runs each file
 * in a process of its own and the tests of a file in order: "not loaded" means not loaded by the tests
 * above it in this file. The long history that the bound puts over is in compact-bound-long.test.ts.
 */
import { describe, expect, it, vi } from 'vitest';
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
  it('decides a short history with the bound, read or grown, and never loads an encoding', async () => {
    const store = await openStore('memory:');
    try {
      const scope = freshScope();
      const session = await store.createSession(scope, {});
      await appendAll(store, scope, session.id, chatTurns(3));
      const first = await store.listMessages(scope, session.id, { limit: 100 });
      // Found under the threshold (read), and remembered as of its last seq.
      expect(
        await maybeCompact({
          store,
          scope,
          sessionId: session.id,
          thresholdTokens: 5000,
          growth: { fromSeq: 0, appended: first },
        }),
      ).toBeNull();
      // The next turn's growth follows it: decided from the remembered bound, with nothing read.
      await appendAll(store, scope, session.id, chatTurns(1, 3));
      const appended = await store.listMessages(scope, session.id, { after_seq: first.length, limit: 10 });
      expect(appended).toHaveLength(4);
      const reads = [vi.spyOn(store, 'listMessages'), vi.spyOn(store, 'lastMessages')];
      const growth = { fromSeq: first.length, appended };
      expect(
        await maybeCompact({ store, scope, sessionId: session.id, thresholdTokens: 5000, growth }),
      ).toBeNull();
      expect(reads.map((spy) => spy.mock.calls.length)).toEqual([0, 0]);
      for (const spy of reads) spy.mockRestore();
      expect(loadedTokenizer()).toBeNull();
    } finally {
      await store.close();
    }
  });

  it('loads the encoding for a history over the bound, and does not compact one under the exact count', async () => {
    const store = await openStore('memory:');
    try {
      const scope = freshScope();
      const session = await store.createSession(scope, {});
      await appendAll(store, scope, session.id, chatTurns(3));
      const messages = await store.listMessages(scope, session.id, { limit: 100 });
      const bound = messages.reduce((n, m) => n + storedMessageTokens(UTF8_BYTES_BOUND, m), 0);
      const threshold = Math.floor(bound * 0.8);
      expect(loadedTokenizer()).toBeNull();
      expect(
        await maybeCompact({ store, scope, sessionId: session.id, thresholdTokens: threshold }),
      ).toBeNull();
      const loaded = loadedTokenizer();
      expect(loaded?.name).toBe('o200k_base');
      expect(await readSummaryHead(store, scope, session.id)).toBeNull();
      // Under the threshold by the exact count: the bound alone would have compacted it.
      const exact = messages.reduce((n, m) => n + storedMessageTokens(loaded!, m), 0);
      expect(exact).toBeLessThanOrEqual(threshold);
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
