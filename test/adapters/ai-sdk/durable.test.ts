/**
 * `agentstate/ai-sdk` in one process, on memory:: `generateText` (ai 6) against a scripted model behind a
 * real Chat Completions server on loopback (`@ai-sdk/openai-compatible`), with AI SDK tools wrapped by
 * `durableTools`. The model's answers are recorded steps and each tool call an action with an idempotency
 * key: a run stopped after its booking resumes without asking the model again for a recorded answer and
 * without booking again; a call cut short is recovered through `lookup`. (Kills of real processes:
 * test/harness/crash-tool-loop.test.ts, `--framework ai-sdk`.)
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { durableModel, durableTools, idempotencyKeyOf } from '../../../src/adapters/ai-sdk/index.js';
import { newId } from '../../../src/core/ids.js';
import type { JsonObject, JsonValue } from '../../../src/core/json.js';
import { type DurableContext, durableRun } from '../../../src/durable/index.js';
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

type Hooks = { afterPay?: (() => void) | undefined };

async function agent(
  ctx: DurableContext,
  ds: ReturnType<typeof downstream>,
  hooks: Hooks = {},
  fetcher: typeof fetch = fetch,
) {
  const provider = createOpenAICompatible({ name: 'scripted', baseURL: model.url, fetch: fetcher });
  const object = (properties: Record<string, { type: 'string' | 'number' }>) =>
    jsonSchema<Record<string, JsonValue>>({ type: 'object', properties });
  const tools = durableTools(
    ctx,
    {
      search_flights: tool({
        description: 'Flights on a date.',
        inputSchema: object({ origin: { type: 'string' }, destination: { type: 'string' } }),
        execute: async (input) => ({ flights: [{ flight: 'AS101', ...input }] }),
      }),
      book_flight: tool({
        description: 'Books a seat.',
        inputSchema: object({ flight: { type: 'string' }, passenger_name: { type: 'string' } }),
        execute: async (_input, options) => {
          const key = idempotencyKeyOf(options);
          return ds.effect('book', key, {
            booking_id: `bk_${ds.effects.length + 1}`,
            pnr: 'ABC234',
            fare_eur: 142,
          });
        },
      }),
      pay: tool({
        description: 'Charges a card.',
        inputSchema: object({ booking_id: { type: 'string' }, amount_eur: { type: 'number' } }),
        execute: async (input, options) => {
          const paid = ds.effect('pay', idempotencyKeyOf(options), { payment_id: 'pay_1', ...input });
          hooks.afterPay?.();
          return paid;
        },
      }),
    },
    { search_flights: { readOnly: true }, book_flight: { lookup: ds.lookup }, pay: { lookup: ds.lookup } },
  );
  const result = await generateText({
    model: durableModel(ctx, provider.chatModel('scripted')),
    prompt: TRIP_REQUEST,
    tools,
    stopWhen: stepCountIs(8),
    maxRetries: 0,
  });
  return result.text;
}

describe('agentstate/ai-sdk', () => {
  it('runs the loop: model answers recorded as steps, tool calls as actions with keys', async () => {
    const s = scope();
    const { id } = await store.createSession(s, { agent: null });
    const ds = downstream();
    const before = model.requests();
    const out = await durableRun(store, { scope: s, sessionId: id }, (ctx) => agent(ctx, ds));
    expect(out).toMatchObject({ status: 'done', value: expect.stringContaining('Booked ABC234 (bk_1)') });
    expect(model.requests() - before).toBe(4);
    const actions = await store.listActions(s, { task_id: out.task_id });
    const byTool = Object.fromEntries(actions.items.map((a) => [a.tool, a]));
    expect(Object.keys(byTool).sort()).toEqual(['book_flight', 'pay']);
    expect(ds.effects.map((e) => e.key)).toEqual([
      byTool.book_flight?.idempotency_key,
      byTool.pay?.idempotency_key,
    ]);
    const checkpoints = await store.listCheckpoints(s, out.run_id, { limit: 100 });
    expect(checkpoints.items.filter((c) => c.label === 'step model')).toHaveLength(4);
  });

  it('a run cut short by a model outage after its payment resumes without asking again nor paying again', async () => {
    const s = scope();
    const { id } = await store.createSession(s, { agent: null });
    const ds = downstream();
    let down = false;
    const hooks: Hooks = {
      afterPay: () => {
        down = true; // the model goes away once the card is charged
      },
    };
    const fetchOrFail: typeof fetch = (input, init) =>
      down ? Promise.reject(new TypeError('fetch failed: connection refused')) : fetch(input, init);
    const before = model.requests();
    const run = () =>
      durableRun(store, { scope: s, sessionId: id }, (ctx) => agent(ctx, ds, hooks, fetchOrFail));
    await expect(run()).rejects.toMatchObject({ code: 'upstream_unavailable' });
    expect(model.requests() - before).toBe(3);
    down = false;
    hooks.afterPay = undefined;
    const out = await run();
    expect(out).toMatchObject({
      status: 'done',
      resumed: true,
      value: expect.stringContaining('paid 142 EUR'),
    });
    // only the answer that was never given is asked for; the booking and the charge happened once
    expect(model.requests() - before).toBe(4);
    expect(ds.effects.map((e) => e.tool)).toEqual(['book', 'pay']);
  });

  it('idempotencyKeyOf refuses a call that did not come through durableTools', () => {
    expect(() => idempotencyKeyOf({ toolCallId: 'c1', messages: [] })).toThrow(/durableTools/);
  });
});
