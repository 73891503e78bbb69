/**
 * `agentstate/langgraph` durable tools and model in one process, on memory:: a LangGraph.js `StateGraph`
 * (agent node, `ToolNode`, `toolsCondition`) against a scripted model behind a real Chat Completions server
 * on loopback, its LangChain tools wrapped by `durableTools` and its model by `durableModel`. The model's
 * answers are recorded steps and each tool call an action with an idempotency key: a run stopped after its
 * payment resumes without asking the model again for a recorded answer and without paying again. (Kills of
 * real processes: test/harness/crash-tool-loop-frameworks.test.ts, `--framework langgraph`.)
 */
import { type BaseMessage, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { durableModel, durableTools, idempotencyKeyOf } from '../../../src/adapters/langgraph/index.js';
import { newId } from '../../../src/core/ids.js';
import type { JsonObject } from '../../../src/core/json.js';
import { type DurableContext, durableRun } from '../../../src/durable/index.js';
import { chatModel } from '../../../src/harness/crash/tool-loop/langgraph-loop.js';
import {
  type ScriptedModelServer,
  startScriptedModel,
  TRIP_REQUEST,
} from '../../../src/harness/crash/tool-loop/model.js';
import { openStore } from '../../../src/store/open.js';
import type { Scope, StateStore } from '../../../src/store/types.js';

let model: ScriptedModelServer;
let store: StateStore;
beforeAll(async () => {
  model = await startScriptedModel();
  store = await openStore('memory:');
});
afterAll(async () => {
  await store.close();
  await model.close();
});

function scope(): Scope {
  return { tenant_id: `t_${newId('run').slice(4, 14)}`, user_id: 'u' };
}

/** A downstream that does not deduplicate: every call to `book` or `pay` is an effect, counted. */
function downstream() {
  const effects: { tool: string; key: string }[] = [];
  const byKey = new Map<string, JsonObject>();
  const effect = (tool: string, key: string, result: JsonObject) => {
    effects.push({ tool, key });
    byKey.set(key, result);
    return result;
  };
  const lookup = async (key: string) => {
    const found = byKey.get(key);
    return found === undefined ? { found: false as const } : { found: true as const, result: found };
  };
  return { effects, effect, lookup };
}

interface Hooks {
  afterPay?: (() => void) | undefined;
  down: boolean;
  searches: number;
}

const object = { type: 'object' } as const;

async function agent(ctx: DurableContext, ds: ReturnType<typeof downstream>, hooks: Hooks) {
  const tools = durableTools(
    ctx,
    [
      tool(
        async (input) => {
          hooks.searches++;
          return { flights: [{ flight: 'AS101', ...input }] };
        },
        {
          name: 'search_flights',
          description: 'Flights on a date.',
          schema: z.object({ origin: z.string(), destination: z.string(), date: z.string() }),
        },
      ),
      tool(
        async (_input, config) =>
          ds.effect('book', idempotencyKeyOf(config), {
            booking_id: `bk_${ds.effects.length + 1}`,
            pnr: 'ABC234',
            fare_eur: 142,
          }),
        {
          name: 'book_flight',
          description: 'Books a seat.',
          schema: z.object({ flight: z.string(), passenger_name: z.string() }),
        },
      ),
      tool(
        async (input, config) => {
          const paid = ds.effect('pay', idempotencyKeyOf(config), { payment_id: 'pay_1', ...input });
          hooks.afterPay?.();
          return paid;
        },
        {
          name: 'pay',
          description: 'Charges a card.',
          schema: z.object({ booking_id: z.string(), amount_eur: z.number(), card: z.string() }),
        },
      ),
    ],
    { search_flights: { readOnly: true }, book_flight: { lookup: ds.lookup }, pay: { lookup: ds.lookup } },
  );
  const specs = tools.map((t) => ({ name: t.name, description: t.description, parameters: object }));
  const inner = chatModel(model.url, specs);
  const llm = durableModel(ctx, {
    invoke: (messages: BaseMessage[]) =>
      hooks.down ? Promise.reject(new TypeError('fetch failed: connection refused')) : inner.invoke(messages),
  });
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('agent', async (state) => ({ messages: [await llm.invoke(state.messages)] }))
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile();
  const { messages } = await graph.invoke({ messages: [new HumanMessage(TRIP_REQUEST)] });
  return String(messages.at(-1)?.content);
}

describe('agentstate/langgraph durable tools', () => {
  it('runs the graph: model answers recorded as steps, tool calls as actions with keys', async () => {
    const s = scope();
    const { id } = await store.createSession(s, { agent: null });
    const ds = downstream();
    const before = model.requests();
    const out = await durableRun(store, { scope: s, sessionId: id }, (ctx) =>
      agent(ctx, ds, { down: false, searches: 0 }),
    );
    expect(out).toMatchObject({ status: 'done', value: expect.stringContaining('Booked ABC234 (bk_1)') });
    expect(model.requests() - before).toBe(4);
    const actions = await store.listActions(s, { task_id: out.task_id });
    const byTool = Object.fromEntries(actions.items.map((a) => [a.tool, a]));
    expect(Object.keys(byTool).sort()).toEqual(['book_flight', 'pay']);
    expect(byTool.pay?.params).toMatchObject({ booking_id: 'bk_1', amount_eur: 142 });
    expect(ds.effects.map((e) => e.key)).toEqual([
      byTool.book_flight?.idempotency_key,
      byTool.pay?.idempotency_key,
    ]);
    const labels = (await store.listCheckpoints(s, out.run_id, { limit: 100 })).items.map((c) => c.label);
    expect(labels.filter((l) => l === 'step model')).toHaveLength(4);
    expect(labels.filter((l) => l === 'step tool search_flights')).toHaveLength(1);
  });

  it('a run cut short by a model outage after its payment resumes without asking again nor paying again', async () => {
    const s = scope();
    const { id } = await store.createSession(s, { agent: null });
    const ds = downstream();
    const hooks: Hooks = { down: false, searches: 0 };
    hooks.afterPay = () => {
      hooks.down = true; // the model goes away once the card is charged
    };
    const before = model.requests();
    const go = () => durableRun(store, { scope: s, sessionId: id }, (ctx) => agent(ctx, ds, hooks));
    await expect(go()).rejects.toMatchObject({ code: 'upstream_unavailable' });
    expect(model.requests() - before).toBe(3);
    hooks.down = false;
    hooks.afterPay = undefined;
    const out = await go();
    expect(out).toMatchObject({
      status: 'done',
      resumed: true,
      value: expect.stringContaining('paid 142 EUR'),
    });
    // only the answer that was never given is asked for; the search, booking and charge happened once
    expect(model.requests() - before).toBe(4);
    expect(ds.effects.map((e) => e.tool)).toEqual(['book', 'pay']);
    expect(hooks.searches).toBe(1);
  });

  it('idempotencyKeyOf refuses a call that did not come through durableTools', () => {
    expect(() => idempotencyKeyOf({ configurable: {} })).toThrow(/durableTools/);
    expect(() => idempotencyKeyOf(undefined)).toThrow(/durableTools/);
  });
});
