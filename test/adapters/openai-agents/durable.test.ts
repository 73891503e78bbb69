/**
 * `agentstate/openai-agents` durable tools and model in one process, on memory:: an `Agent` run by `run`
 * (@openai/agents, its Chat Completions model) against a scripted model behind a real Chat Completions
 * server on loopback, with SDK function tools wrapped by `durableTools`. The model's answers are recorded
 * steps and each tool call an action with an idempotency key: a run stopped after its payment resumes
 * without asking the model again for a recorded answer and without paying again. (Kills of real
 * processes: test/harness/crash-tool-loop-frameworks.test.ts, `--framework openai-agents`.)
 */
import { Agent, OpenAIChatCompletionsModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { durableModel, durableTools, idempotencyKeyOf } from '../../../src/adapters/openai-agents/index.js';
import { newId } from '../../../src/core/ids.js';
import type { JsonObject } from '../../../src/core/json.js';
import { type DurableContext, durableRun } from '../../../src/durable/index.js';
import {
  type ScriptedModelServer,
  startScriptedModel,
  TRIP_REQUEST,
} from '../../../src/harness/crash/tool-loop/model.js';
import { openStore } from '../../../src/store/open.js';
import type { Scope, StateStore } from '../../../src/store/types.js';

setTracingDisabled(true);

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

type Hooks = { afterPay?: (() => void) | undefined; searches: number };

async function agent(
  ctx: DurableContext,
  ds: ReturnType<typeof downstream>,
  hooks: Hooks,
  fetcher: typeof fetch = fetch,
): Promise<string> {
  const client = new OpenAI({ apiKey: 'test-key', baseURL: model.url, maxRetries: 0, fetch: fetcher });
  const tools = durableTools(
    ctx,
    [
      tool({
        name: 'search_flights',
        description: 'Flights on a date.',
        parameters: z.object({ origin: z.string(), destination: z.string(), date: z.string() }),
        execute: async (input) => {
          hooks.searches++;
          return { flights: [{ flight: 'AS101', ...input }] };
        },
      }),
      tool({
        name: 'book_flight',
        description: 'Books a seat.',
        parameters: z.object({ flight: z.string(), passenger_name: z.string() }),
        execute: async (_input, _run, details) =>
          ds.effect('book', idempotencyKeyOf(details), {
            booking_id: `bk_${ds.effects.length + 1}`,
            pnr: 'ABC234',
            fare_eur: 142,
          }),
      }),
      tool({
        name: 'pay',
        description: 'Charges a card.',
        parameters: z.object({ booking_id: z.string(), amount_eur: z.number(), card: z.string() }),
        execute: async (input, _run, details) => {
          const paid = ds.effect('pay', idempotencyKeyOf(details), { payment_id: 'pay_1', ...input });
          hooks.afterPay?.();
          return paid;
        },
      }),
    ],
    { search_flights: { readOnly: true }, book_flight: { lookup: ds.lookup }, pay: { lookup: ds.lookup } },
  );
  const booker = new Agent({
    name: 'booker',
    instructions: 'Book and pay.',
    model: durableModel(ctx, new OpenAIChatCompletionsModel(client, 'scripted')),
    tools,
  });
  const result = await run(booker, TRIP_REQUEST, { maxTurns: 8 });
  return String(result.finalOutput);
}

describe('agentstate/openai-agents durable tools', () => {
  it('runs the agent: model answers recorded as steps, tool calls as actions with keys', async () => {
    const s = scope();
    const { id } = await store.createSession(s, { agent: null });
    const ds = downstream();
    const before = model.requests();
    const out = await durableRun(store, { scope: s, sessionId: id }, (ctx) =>
      agent(ctx, ds, { searches: 0 }),
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
    const checkpoints = await store.listCheckpoints(s, out.run_id, { limit: 100 });
    const labels = checkpoints.items.map((c) => c.label);
    expect(labels.filter((l) => l === 'step model')).toHaveLength(4);
    expect(labels.filter((l) => l === 'step tool search_flights')).toHaveLength(1);
  });

  it('a run cut short by a model outage after its payment resumes without asking again nor paying again', async () => {
    const s = scope();
    const { id } = await store.createSession(s, { agent: null });
    const ds = downstream();
    let down = false;
    const hooks: Hooks = {
      searches: 0,
      afterPay: () => {
        down = true; // the model goes away once the card is charged
      },
    };
    const fetchOrFail: typeof fetch = (input, init) =>
      down ? Promise.reject(new TypeError('fetch failed: connection refused')) : fetch(input, init);
    const before = model.requests();
    const go = () =>
      durableRun(store, { scope: s, sessionId: id }, (ctx) => agent(ctx, ds, hooks, fetchOrFail));
    await expect(go()).rejects.toMatchObject({ code: 'upstream_unavailable' });
    expect(model.requests() - before).toBe(3);
    down = false;
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

  it('a streamed run is refused, and idempotencyKeyOf refuses a call that did not come through durableTools', async () => {
    const s = scope();
    const { id } = await store.createSession(s, { agent: null });
    const client = new OpenAI({ apiKey: 'test-key', baseURL: model.url, maxRetries: 0 });
    const streamed = durableRun(store, { scope: s, sessionId: id }, async (ctx) => {
      const agentModel = durableModel(ctx, new OpenAIChatCompletionsModel(client, 'scripted'));
      const stream = await run(new Agent({ name: 'a', model: agentModel }), 'hi', { stream: true });
      await stream.completed;
      return 'streamed';
    });
    await expect(streamed).rejects.toMatchObject({ code: 'invalid_request', message: /not supported/ });
    expect(() => idempotencyKeyOf({})).toThrow(/durableTools/);
    expect(() => idempotencyKeyOf(undefined)).toThrow(/durableTools/);
  });
});
