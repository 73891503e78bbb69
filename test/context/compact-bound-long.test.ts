/**
 * A long history with no tokenizer given, in a process of its own (vitest forks one per file) so that no
 * encoding is loaded before: the byte bound puts it over the threshold, the encoding is loaded, and the
 * summary is the one the encoding itself gives.
 */
import { expect, it } from 'vitest';
import { maybeCompact } from '../../src/context/compact.js';
import { loadedTokenizer, loadTokenizer } from '../../src/context/tokenizer.js';
import { openStore } from '../../src/store/open.js';
import { appendAll, chatTurns, freshScope } from './stores.js';

it('compacts a long history as with the encoding given, loading it on the way', async () => {
  const store = await openStore('memory:');
  try {
    const scope = freshScope();
    const long = await store.createSession(scope, {});
    const twin = await store.createSession(scope, {});
    await appendAll(store, scope, long.id, chatTurns(30));
    await appendAll(store, scope, twin.id, chatTurns(30));
    expect(loadedTokenizer()).toBeNull();
    const withBound = await maybeCompact({ store, scope, sessionId: long.id, thresholdTokens: 600 });
    expect(loadedTokenizer()?.name).toBe('o200k_base');
    const tokenizer = await loadTokenizer();
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
