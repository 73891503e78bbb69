/**
 * AgentStateSession with a real Agent of @openai/agents, run over several turns against a local Chat
 * Completions server, on every store: the stored history, a tool call, restarts, windows, transactions,
 * pop/clear, scope and TTL.
 */
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentStateSession } from '../../../src/adapters/openai-agents/index.js';
import { freshScope, type OpenedStore, openTestStore, type StoreName } from '../stores.js';
import { type FakeOpenAI, startFakeOpenAI } from './fake-openai.js';

setTracingDisabled(true);

const STORES: StoreName[] = ['memory', 'sqlite', 'postgres', 'redis', 'tiered'];

describe.each(STORES)('AgentStateSession over %s', (name) => {
  let opened: OpenedStore;
  let server: FakeOpenAI;
  let agent: Agent;
  const weatherCalls: string[] = [];

  beforeAll(async () => {
    opened = await openTestStore(name);
    server = await startFakeOpenAI();
    const client = new OpenAI({ apiKey: 'test-key', baseURL: server.baseURL, maxRetries: 0 });
    agent = new Agent({
      name: 'weather',
      instructions: 'Answer weather questions with the tool.',
      model: new OpenAIChatCompletionsModel(client, 'fake-model'),
      tools: [
        tool({
          name: 'get_weather',
          description: 'The weather of a city',
          parameters: z.object({ city: z.string() }),
          execute: async ({ city }) => {
            weatherCalls.push(city);
            return `sunny in ${city}`;
          },
        }),
      ],
    });
  });

  afterAll(async () => {
    await server?.close();
    await opened?.cleanup();
  });

  const session = (scope = freshScope(), sessionId?: string) =>
    new AgentStateSession({ store: opened.store, ...scope, ...(sessionId ? { sessionId } : {}) });

  it('keeps a conversation with a tool call across turns and a new session object', async () => {
    const scope = freshScope();
    const first = session(scope);
    const one = await run(agent, 'What is the weather in Paris?', { session: first });
    expect(one.finalOutput).toBe('Report: sunny in Paris');
    expect(weatherCalls).toContain('Paris');

    const items = await first.getItems();
    expect(items.map((i) => ('type' in i ? i.type : 'message'))).toEqual([
      'message',
      'function_call',
      'function_call_result',
      'message',
    ]);
    const id = await first.getSessionId();
    const stored = await opened.store.listMessages(scope, id);
    expect(stored.map((m) => [m.seq, m.role])).toEqual([
      [1, 'user'],
      [2, 'assistant'],
      [3, 'tool'],
      [4, 'assistant'],
    ]);
    expect(stored[0]?.content).toBe('What is the weather in Paris?');
    expect(stored[1]?.tool_calls?.[0]?.name).toBe('get_weather');
    expect(stored[2]?.tool_call_id).toBe(stored[1]?.tool_calls?.[0]?.id);
    expect(stored[3]?.content).toBe('Report: sunny in Paris');

    const two = await run(agent, 'Thanks!', { session: first });
    expect(two.finalOutput).toBe('Seen 2 user messages; last: Thanks!');
    // The model was sent the whole first turn, tool exchange included.
    const sent = server.requests[server.requests.length - 1] ?? [];
    expect(sent.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'user']);

    // A new object over the same id (a restarted process) continues the same history.
    const again = session(scope, id);
    const three = await run(agent, 'And once more', { session: again });
    expect(three.finalOutput).toBe('Seen 3 user messages; last: And once more');
    expect((await again.getItems()).length).toBe(8);
    expect((await opened.store.listMessages(scope, id)).map((m) => m.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('getItems(limit) never starts a window with a result whose call was cut off', async () => {
    const s = session();
    await run(agent, 'weather in Rome', { session: s });
    const all = await s.getItems();
    expect(all).toHaveLength(4);
    const three = await s.getItems(3); // would start at the call: complete
    expect(three.map((i) => ('type' in i ? i.type : 'message'))).toEqual([
      'function_call',
      'function_call_result',
      'message',
    ]);
    const two = await s.getItems(2); // would start at the result: the orphan is left out
    expect(two.map((i) => ('type' in i ? i.type : 'message'))).toEqual(['message']);
    expect(await s.getItems(0)).toEqual([]);
  });

  it('applies a history transaction once per operation id', async () => {
    const s = session();
    const item = { role: 'user' as const, content: 'hello' };
    await s.applyHistoryTransaction({
      operationId: 'op-1',
      transaction: { type: 'append_items', items: [item] },
    });
    await s.applyHistoryTransaction({
      operationId: 'op-1',
      transaction: { type: 'append_items', items: [item] },
    });
    expect(await s.getItems()).toEqual([item]);
    await expect(
      s.applyHistoryTransaction({
        operationId: 'op-1',
        transaction: { type: 'append_items', items: [{ role: 'user', content: 'other' }] },
      }),
    ).rejects.toMatchObject({ code: 'invalid_request' });

    const replacement = { role: 'user' as const, content: 'hello, edited' };
    await expect(
      s.applyHistoryTransaction({
        operationId: 'op-2',
        transaction: { type: 'replace_suffix', expectedSuffix: [replacement], replacement: [item] },
      }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await s.getItems()).toEqual([item]);
    await s.applyHistoryTransaction({
      operationId: 'op-3',
      transaction: { type: 'replace_suffix', expectedSuffix: [item], replacement: [replacement] },
    });
    await s.applyHistoryTransaction({
      operationId: 'op-3',
      transaction: { type: 'replace_suffix', expectedSuffix: [item], replacement: [replacement] },
    });
    expect(await s.getItems()).toEqual([replacement]);
    await expect(
      s.applyHistoryTransaction({
        operationId: 'op-4',
        transaction: {
          type: 'append_items',
          items: [{ role: 'user', content: 'x', bad: new Date() } as never],
        },
      }),
    ).rejects.toMatchObject({ code: 'invalid_request' });
    expect(await s.getItems()).toEqual([replacement]);
  });

  it('pops the last item and clears the session', async () => {
    const s = session();
    await s.addItems([
      { role: 'user', content: 'a' },
      { role: 'user', content: 'b' },
    ]);
    expect(await s.popItem()).toEqual({ role: 'user', content: 'b' });
    expect(await s.getItems()).toEqual([{ role: 'user', content: 'a' }]);
    await s.addItems([{ role: 'user', content: 'c' }]);
    expect(await s.getItems(1)).toEqual([{ role: 'user', content: 'c' }]);
    await s.clearSession();
    expect(await s.getItems()).toEqual([]);
    expect(await s.popItem()).toBeUndefined();
    await s.addItems([{ role: 'user', content: 'fresh' }]);
    expect(await s.getItems()).toEqual([{ role: 'user', content: 'fresh' }]);
  });

  it('scopes sessions by tenant and user', async () => {
    const owner = session();
    await owner.addItems([{ role: 'user', content: 'secret' }]);
    const id = await owner.getSessionId();
    const intruder = session(freshScope('other'), id);
    expect(await intruder.getItems()).toEqual([]);
    // Another user's id names, for the intruder, a session of their own (under that id or a new one).
    await intruder.addItems([{ role: 'user', content: 'x' }]);
    expect(await intruder.getItems()).toEqual([{ role: 'user', content: 'x' }]);
    expect(await owner.getItems()).toEqual([{ role: 'user', content: 'secret' }]);
  });

  it('creates the session with its TTL', async () => {
    const scope = freshScope();
    const s = new AgentStateSession({ store: opened.store, ...scope, ttlSeconds: 120, agent: 'weather' });
    await s.addItems([{ role: 'user', content: 'hi' }]);
    const stored = await opened.store.getSession(scope, await s.getSessionId());
    expect(stored?.ttl_seconds).toBe(120);
    expect(stored?.agent).toBe('weather');
  });
});
