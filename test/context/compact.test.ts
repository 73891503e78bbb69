import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContext } from '../../src/context/build.js';
import { countChat } from '../../src/context/chat-format.js';
import { historyOverThreshold, maybeCompact } from '../../src/context/compact.js';
import { rulesSummarizer } from '../../src/context/summarizer.js';
import {
  listSummaries,
  readSummaryHead,
  summaryKey,
  summaryNamespace,
} from '../../src/context/summary-store.js';
import { loadTokenizer, type Tokenizer } from '../../src/context/tokenizer.js';
import type { StateStore } from '../../src/store/types.js';
import { appendAll, chatTurns, freshScope, STORES } from './stores.js';

describe.each(STORES)('compaction as data on $name', (kind) => {
  let store: StateStore;
  let cleanup: () => Promise<void>;
  let tok: Tokenizer;
  beforeAll(async () => {
    ({ store, cleanup } = await kind.open());
    tok = await loadTokenizer();
  });
  afterAll(async () => cleanup?.());

  async function sessionWith(turns: number) {
    const scope = freshScope();
    const session = await store.createSession(scope, {});
    await appendAll(store, scope, session.id, chatTurns(turns));
    return { scope, session };
  }

  it('does nothing under the threshold', async () => {
    const { scope, session } = await sessionWith(3);
    expect(
      await maybeCompact({ store, scope, sessionId: session.id, thresholdTokens: 5000, tokenizer: tok }),
    ).toBeNull();
    expect(await readSummaryHead(store, scope, session.id)).toBeNull();
  });

  it('the check alone says over or under and writes nothing; the compaction then writes', async () => {
    const small = await sessionWith(3);
    const check = { store, thresholdTokens: 600, tokenizer: tok };
    expect(await historyOverThreshold({ ...check, scope: small.scope, sessionId: small.session.id })).toBe(
      false,
    );
    const big = await sessionWith(30);
    const options = { ...check, scope: big.scope, sessionId: big.session.id };
    expect(await historyOverThreshold(options)).toBe(true);
    expect(await readSummaryHead(store, big.scope, big.session.id)).toBeNull();
    expect(await maybeCompact(options)).not.toBeNull();
    expect(await historyOverThreshold(options)).toBe(false);
  });

  it('stores a summary of the older range as memory data; raw messages stay; the range ends between units', async () => {
    const { scope, session } = await sessionWith(30); // 120 messages
    const record = await maybeCompact({
      store,
      scope,
      sessionId: session.id,
      thresholdTokens: 600,
      tokenizer: tok,
    });
    expect(record).not.toBeNull();
    expect(record!.from_seq).toBe(1);
    expect(record!.to_seq).toBeGreaterThan(60);
    expect(record!.to_seq).toBeLessThan(120);
    expect(record!.message_count).toBe(record!.to_seq);
    expect(record!.summarizer).toBe('rules');
    expect(record!.points.length).toBeGreaterThan(0);
    const next = await store.listMessages(scope, session.id, { after_seq: record!.to_seq, limit: 1 });
    expect(next[0]!.role).not.toBe('tool');
    expect(await store.lastMessages(scope, session.id, 1)).toMatchObject([{ seq: 120 }]);
    const stored = await store.getMemory(scope, summaryNamespace(session.id), summaryKey(record!.to_seq));
    expect(stored?.value).toEqual(record);
    expect(summaryKey(record!.to_seq)).toMatch(/^\d{12}$/);
    expect(await readSummaryHead(store, scope, session.id)).toEqual(record);
    // compacting again right away has nothing to do
    expect(
      await maybeCompact({ store, scope, sessionId: session.id, thresholdTokens: 600, tokenizer: tok }),
    ).toBeNull();
  });

  it('rolls: a later compaction folds the previous summary and covers 1..to_seq', async () => {
    const { scope, session } = await sessionWith(30);
    const summarizer = rulesSummarizer({ maxPoints: 1000 });
    const opts = { store, scope, sessionId: session.id, thresholdTokens: 600, tokenizer: tok, summarizer };
    const first = await maybeCompact(opts);
    await appendAll(store, scope, session.id, chatTurns(20, 30));
    const second = await maybeCompact(opts);
    expect(second!.from_seq).toBe(1);
    expect(second!.to_seq).toBeGreaterThan(first!.to_seq);
    expect(second!.message_count).toBe(second!.to_seq);
    expect(second!.points.slice(0, first!.points.length)).toEqual(first!.points);
    expect(second!.points[first!.points.length]).toContain(`[${first!.to_seq + 1}]`);
    expect(second!.points[second!.points.length - 1]).toContain(`[${second!.to_seq}]`);
    const all = await listSummaries(store, scope, session.id);
    expect(all.map((s) => s.to_seq)).toEqual([first!.to_seq, second!.to_seq]);
  });

  it('the builder uses the summary in place of the range it covers', async () => {
    const { scope, session } = await sessionWith(30);
    const record = await maybeCompact({
      store,
      scope,
      sessionId: session.id,
      thresholdTokens: 600,
      tokenizer: tok,
    });
    const ctx = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 100_000,
      tokenizer: tok,
    });
    expect(ctx.included.messages!.first_seq).toBe(record!.to_seq + 1);
    expect(ctx.included.messages!.last_seq).toBe(120);
    expect(ctx.system).toContain(`# Earlier in this session (messages 1-${record!.to_seq}, summarized)`);
    for (const point of record!.points) expect(ctx.system).toContain(`- ${point}`);
    expect(ctx.included.summary).toEqual({
      from_seq: 1,
      to_seq: record!.to_seq,
      points_shown: record!.points.length,
      points_total: record!.points.length,
    });
    expect(ctx.included.omitted).toBeNull();
    expect(ctx.messages[0]!.role).not.toBe('tool');
    // without summaries the same budget shows the raw history
    const raw = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 100_000,
      tokenizer: tok,
      summaries: false,
    });
    expect(raw.messages).toHaveLength(120);
  });

  it('shows the newest summary points that fit the budget left after the messages', async () => {
    const { scope, session } = await sessionWith(30);
    const record = await maybeCompact({
      store,
      scope,
      sessionId: session.id,
      thresholdTokens: 600,
      tokenizer: tok,
    });
    const full = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 100_000,
      tokenizer: tok,
    });
    const tight = full.token_count - 40;
    const ctx = await buildContext({ store, scope, sessionId: session.id, maxTokens: tight, tokenizer: tok });
    expect(ctx.token_count).toBeLessThanOrEqual(tight);
    expect(ctx.token_count).toBe(countChat(tok, ctx.system, ctx.messages));
    expect(ctx.messages).toEqual(full.messages);
    const shown = ctx.included.summary!.points_shown;
    expect(shown).toBeLessThan(record!.points.length);
    const newest = record!.points[record!.points.length - 1]!;
    if (shown > 0) expect(ctx.system).toContain(newest);
    expect(ctx.system).not.toContain(record!.points[0]!);
  });

  it('refuses bad thresholds', async () => {
    const { scope, session } = await sessionWith(1);
    await expect(
      maybeCompact({ store, scope, sessionId: session.id, thresholdTokens: 0 }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(
      maybeCompact({ store, scope, sessionId: session.id, thresholdTokens: 10, keepTokens: 11 }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
  });
});
