/** Summaries and branches: a rewound session never builds its context from a summary of the line it left. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContext } from '../../src/context/build.js';
import { maybeCompact } from '../../src/context/compact.js';
import { readSummaryHead } from '../../src/context/summary-store.js';
import { loadTokenizer, type Tokenizer } from '../../src/context/tokenizer.js';
import type { StateStore } from '../../src/store/types.js';
import { appendAll, chatTurns, freshScope, STORES } from './stores.js';

describe.each(STORES)('summaries across a rewind on $name', (kind) => {
  let store: StateStore;
  let cleanup: () => Promise<void>;
  let tok: Tokenizer;
  beforeAll(async () => {
    ({ store, cleanup } = await kind.open());
    tok = await loadTokenizer();
  });
  afterAll(async () => cleanup?.());

  async function compacted() {
    const scope = freshScope();
    const session = await store.createSession(scope, {});
    await appendAll(store, scope, session.id, chatTurns(30));
    const record = await maybeCompact({
      store,
      scope,
      sessionId: session.id,
      thresholdTokens: 600,
      tokenizer: tok,
    });
    expect(record?.to_message_id).toBeDefined();
    return { scope, session, record: record! };
  }

  it('a summary past the rewind point is not used; one before it still is', async () => {
    const { scope, session, record } = await compacted();
    const build = () =>
      buildContext({ store, scope, sessionId: session.id, maxTokens: 100_000, tokenizer: tok });
    expect((await build()).included.summary?.to_seq).toBe(record.to_seq);

    await store.rewindSession(scope, session.id, { at_seq: record.to_seq + 2 });
    const kept = await build();
    expect(kept.included.summary?.to_seq).toBe(record.to_seq);

    await store.rewindSession(scope, session.id, { at_seq: 10 });
    await store.appendMessages(scope, session.id, [{ role: 'user', content: 'a new line' }]);
    const fresh = await build();
    expect(fresh.included.summary).toBeNull();
    const shown = fresh.messages.map((m) => m.content);
    expect(shown).toHaveLength(11);
    expect(shown.at(-1)).toBe('a new line');
    // The old summary stays stored (for audit); it only no longer speaks for the session.
    expect(await readSummaryHead(store, scope, session.id)).toEqual(record);
  });
});
