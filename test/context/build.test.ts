import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContext } from '../../src/context/build.js';
import { countChat, countMessage, toChatMessage } from '../../src/context/chat-format.js';
import { loadTokenizer, type Tokenizer } from '../../src/context/tokenizer.js';
import { newId } from '../../src/core/ids.js';
import type { StateStore } from '../../src/store/types.js';
import { appendAll, chatTurns, freshScope, STORES } from './stores.js';

describe.each(STORES)('buildContext on $name', (kind) => {
  let store: StateStore;
  let cleanup: () => Promise<void>;
  let tok: Tokenizer;
  beforeAll(async () => {
    ({ store, cleanup } = await kind.open());
    tok = await loadTokenizer('o200k_base');
  });
  afterAll(async () => cleanup?.());

  async function sessionWith(turns: number) {
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    await appendAll(store, scope, session.id, chatTurns(turns));
    return { scope, session };
  }

  it('keeps the whole request within the budget, exactly by the tokenizer, for every budget', async () => {
    const { scope, session } = await sessionWith(12);
    let previous = -1;
    for (let max = 40; max <= 1400; max += 37) {
      const ctx = await buildContext({ store, scope, sessionId: session.id, maxTokens: max, tokenizer: tok });
      expect(ctx.token_count).toBe(countChat(tok, ctx.system, ctx.messages));
      expect(ctx.token_count).toBeLessThanOrEqual(max);
      if (ctx.messages.length > 0) expect(ctx.messages[0]!.role).not.toBe('tool');
      // more budget never shows fewer messages
      expect(ctx.messages.length).toBeGreaterThanOrEqual(previous);
      previous = ctx.messages.length;
      // every tool result sits right after the call that asked for it
      ctx.messages.forEach((m, i) => {
        if (m.role === 'tool') expect(ctx.messages[i - 1]?.tool_calls?.[0]?.id).toBe(m.tool_call_id);
      });
    }
    const all = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 100_000,
      tokenizer: tok,
    });
    expect(all.messages).toHaveLength(48);
    expect(all.included.omitted).toBeNull();
  });

  it('fills the window up to the last unit that fits: the next older unit would overflow', async () => {
    const { scope, session } = await sessionWith(6);
    const ctx = await buildContext({ store, scope, sessionId: session.id, maxTokens: 300, tokenizer: tok });
    const first = ctx.included.messages!.first_seq;
    expect(first).toBeGreaterThan(1);
    const older = await store.listMessages(scope, session.id, { after_seq: 0, limit: first - 1 });
    // the unit right before the window: a single message, or a tool call with its result
    const before = older[older.length - 1]!;
    const unit = before.role === 'tool' ? older.slice(-2) : [before];
    const unitCost = unit.reduce((s, m) => s + countMessage(tok, toChatMessage(m)), 0);
    expect(ctx.token_count + unitCost).toBeGreaterThan(300);
    expect(ctx.included.omitted).toEqual({ from_seq: 1, to_seq: first - 1 });
    expect(ctx.system).toContain(`(messages 1-${first - 1} are not shown)`);
  });

  it('builds the system part from the open tasks of the session, not from the chat', async () => {
    const { scope, session } = await sessionWith(2);
    await store.createTask(scope, {
      session_id: session.id,
      type: 'flight_booking',
      state: 'COLLECTING',
      slots: { origin: 'PEK', destination: null },
      status_line: 'Collecting: destination missing',
    });
    const other = await store.createSession(scope, {});
    await store.createTask(scope, { session_id: other.id, type: 'other_session_task' });
    const ctx = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 2000,
      taskTypes: { flight_booking: { required_slots: ['origin', 'destination', 'date'] } },
    });
    expect(ctx.system).toContain('state COLLECTING');
    expect(ctx.system).toContain('Slots filled: origin=PEK');
    expect(ctx.system).toContain('Slots missing: destination, date');
    expect(ctx.system).toContain('Next step: ask the user for destination');
    expect(ctx.system).toContain('Status: Collecting: destination missing');
    expect(ctx.system).not.toContain('other_session_task');
    expect(ctx.system).not.toContain('Turn 0');
    expect(ctx.included.tasks).toHaveLength(1);
  });

  it('puts instructions first and refuses a budget too small for instructions and tasks', async () => {
    const { scope, session } = await sessionWith(1);
    const ctx = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 500,
      instructions: 'You are a travel agent.',
    });
    expect(ctx.system.startsWith('You are a travel agent.\n\n# Open tasks')).toBe(true);
    const small = buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 5,
      instructions: 'You are a travel agent.',
    });
    await expect(small).rejects.toMatchObject({ code: 'invalid_request', details: { field: 'max_tokens' } });
    await expect(buildContext({ store, scope, sessionId: session.id, maxTokens: 0 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
  });

  it('includes the user’s preferences and facts, never another user’s, and never other namespaces', async () => {
    const { scope, session } = await sessionWith(1);
    await store.putMemory(scope, { namespace: 'preferences', key: 'language', value: 'zh-CN' });
    await store.putMemory(scope, { namespace: 'facts', key: 'home_airport', value: 'PEK' });
    await store.putMemory(scope, { namespace: 'scratch', key: 'x', value: 'not for the model' });
    const other = { tenant_id: scope.tenant_id, user_id: `${scope.user_id}_b` };
    await store.putMemory(other, { namespace: 'preferences', key: 'secret', value: 'user B only' });
    const ctx = await buildContext({ store, scope, sessionId: session.id, maxTokens: 2000 });
    expect(ctx.system).toContain('- preferences.language: zh-CN');
    expect(ctx.system).toContain('- facts.home_airport: PEK');
    expect(ctx.system).not.toContain('not for the model');
    expect(ctx.system).not.toContain('user B only');
    expect(ctx.included.memory).toHaveLength(2);
    // another user cannot build this session's context at all
    await expect(
      buildContext({ store, scope: other, sessionId: session.id, maxTokens: 2000 }),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
  });

  it('gives memory priority over messages, and drops memory that does not fit', async () => {
    const { scope, session } = await sessionWith(3);
    for (let i = 0; i < 20; i++) {
      await store.putMemory(scope, {
        namespace: 'facts',
        key: `fact_${String(i).padStart(2, '0')}`,
        value: `a fact about the user number ${i}`,
      });
    }
    const ctx = await buildContext({ store, scope, sessionId: session.id, maxTokens: 150, tokenizer: tok });
    expect(ctx.token_count).toBeLessThanOrEqual(150);
    expect(ctx.included.memory.length).toBeGreaterThan(0);
    expect(ctx.included.memory_omitted).toBeGreaterThan(0);
    expect(ctx.included.memory.length + ctx.included.memory_omitted).toBe(20);
    expect(ctx.messages).toHaveLength(0);
    const without = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 150,
      tokenizer: tok,
      memory: false,
    });
    expect(without.messages.length).toBeGreaterThan(0);
  });

  it('counts with the encoding it is asked for', async () => {
    const { scope, session } = await sessionWith(4);
    const o = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 5000,
      tokenizer: 'gpt-4o',
    });
    const c = await buildContext({
      store,
      scope,
      sessionId: session.id,
      maxTokens: 5000,
      tokenizer: 'cl100k_base',
    });
    expect(o.included.tokenizer).toBe('o200k_base');
    expect(c.included.tokenizer).toBe('cl100k_base');
    expect(c.token_count).toBe(countChat(await loadTokenizer('cl100k_base'), c.system, c.messages));
    expect(o.messages).toEqual(c.messages);
  });

  it('reads only the pages the window needs from the store, however long the history', async () => {
    const { scope, session } = await sessionWith(400); // 1600 messages
    const ctx = await buildContext({ store, scope, sessionId: session.id, maxTokens: 800, tokenizer: tok });
    expect(ctx.included.messages!.last_seq).toBe(1600);
    expect(ctx.included.messages_read).toBeLessThan(100);
    expect(ctx.included.messages_read).toBeGreaterThanOrEqual(ctx.messages.length);
  });

  it('answers not_found for a missing session', async () => {
    await expect(
      buildContext({ store, scope: freshScope(), sessionId: newId('session'), maxTokens: 100 }),
    ).rejects.toMatchObject({
      code: 'not_found',
    });
  });
});
