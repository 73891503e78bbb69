/**
 * Durable runs in one process, on memory:, a SQLite file and PostgreSQL: steps, the clock, random values and
 * sleep deadlines recorded and replayed; values typed through schemas and codecs; waiting for input; run
 * keys; the session lease; bad input and bad options refused with `invalid_request`. Actions are in
 * actions.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ManualClock } from '../../src/core/clock.js';
import { AgentStateError } from '../../src/core/errors.js';
import { newId } from '../../src/core/ids.js';
import type { JsonValue } from '../../src/core/json.js';
import { type DurableContext, type DurableRunOptions, durableRun } from '../../src/durable/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { freshScope, memoryStore, postgresStore, sqliteStore, type TestStore, tempDir } from './stores.js';

const temp = tempDir();
const stores: TestStore[] = [memoryStore(), sqliteStore(temp.dir), postgresStore()];
afterAll(async () => {
  for (const s of stores) await s.cleanup();
  temp.cleanup();
});

const fast = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2, timeoutMs: 5_000 };

describe.each(stores)('durable runs on $name', (testStore) => {
  let store: StateStore;
  beforeAll(async () => {
    store = await testStore.open();
  });
  afterAll(async () => {
    await store.close();
  });

  async function session(): Promise<{ scope: Scope; sessionId: string; base: DurableRunOptions }> {
    const scope = freshScope();
    const { id } = await store.createSession(scope, { agent: null });
    return { scope, sessionId: id, base: { scope, sessionId: id, retry: fast } };
  }

  it('runs steps once and answers the result typed by its schema', async () => {
    const { scope, base } = await session();
    let calls = 0;
    const out = await durableRun(
      store,
      { ...base, result: { schema: z.object({ total: z.number(), at: z.number(), r: z.number() }) } },
      async (ctx) => {
        const price = await ctx.step('price', () => {
          calls++;
          return 40;
        });
        const total = await ctx.step('total', async () => price + 2);
        return { total, at: await ctx.now(), r: await ctx.random() };
      },
    );
    expect(out.status).toBe('done');
    if (out.status !== 'done') return;
    expect(out.value.total).toBe(42);
    expect(out.value.r).toBeGreaterThanOrEqual(0);
    expect(out.value.r).toBeLessThan(1);
    expect(calls).toBe(1);
    expect(out.resumed).toBe(false);
    const task = await store.getTask(scope, out.task_id);
    expect(task?.state).toBe('DONE');
    expect(task?.data.result).toEqual(out.value);
  });

  it('replays recorded steps, clock and random values after an interruption instead of producing them again', async () => {
    const { scope, base } = await session();
    let quoteCalls = 0;
    const seen: unknown[] = [];
    const program = (interrupt: boolean) => async (ctx: DurableContext) => {
      const at = await ctx.now();
      const r = await ctx.random();
      const quote = await ctx.step('quote', () => {
        quoteCalls++;
        return { price: 100 + quoteCalls, token: Math.random() };
      });
      seen.push({ at, r, quote });
      if (interrupt) throw new AgentStateError('store_unavailable', 'the store went away');
      return { at, r, quote };
    };
    await expect(durableRun(store, base, program(true))).rejects.toMatchObject({ code: 'store_unavailable' });
    expect(await store.listTasks(scope, { state: 'EXECUTING' })).toMatchObject({
      items: [{ type: 'durable' }],
    });
    const out = await durableRun(store, base, program(false));
    expect(quoteCalls).toBe(1);
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
    expect(out).toMatchObject({ status: 'done', resumed: true, value: seen[0] });
    expect((await store.listTasks(scope, { state: 'EXECUTING' })).items).toEqual([]);
  });

  it('waits for input, refuses input its schema refuses, and goes on with valid input', async () => {
    const { scope, sessionId, base } = await session();
    const answer = z.object({ confirm: z.boolean() });
    const program = async (ctx: DurableContext) => {
      const made = await ctx.step('offer', () => ({ seat: '12A' }));
      const reply = await ctx.waitForInput({ prompt: 'Book seat 12A?', schema: answer });
      return { seat: made.seat, confirmed: reply.confirm };
    };
    const first = await durableRun(store, base, program);
    expect(first).toMatchObject({ status: 'waiting', prompt: 'Book seat 12A?', input_used: false });
    expect((await store.getSession(scope, sessionId))?.status).toBe('waiting_for_user');
    expect(await durableRun(store, base, program)).toMatchObject({
      status: 'waiting',
      prompt: 'Book seat 12A?',
    });
    const bad = durableRun(store, { ...base, input: { confirm: 'yes' } }, program);
    await expect(bad).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringMatching(/^input: confirm/),
    });
    const out = await durableRun(store, { ...base, input: { confirm: true } }, program);
    expect(out).toMatchObject({ status: 'done', value: { seat: '12A', confirmed: true }, input_used: true });
    expect((await store.getSession(scope, sessionId))?.status).toBe('active');
  });

  it('gives a new run the input it was started with', async () => {
    const { base } = await session();
    const out = await durableRun(store, { ...base, input: 'to Shanghai' }, async (ctx) => {
      const request = await ctx.waitForInput({ schema: z.string() });
      return request.toUpperCase();
    });
    expect(out).toMatchObject({ status: 'done', value: 'TO SHANGHAI', input_used: true });
  });

  it('keeps a new run whose start input its schema refuses waiting, and goes on with valid input', async () => {
    const { base } = await session();
    let searches = 0;
    const program = async (ctx: DurableContext) => {
      const request = await ctx.waitForInput({ prompt: 'Where to?', schema: z.string().length(3) });
      return ctx.step('search', () => {
        searches++;
        return `flights to ${request}`;
      });
    };
    await expect(durableRun(store, { ...base, input: 'Shanghai' }, program)).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('input: '),
    });
    expect(await durableRun(store, base, program)).toMatchObject({ status: 'waiting', prompt: 'Where to?' });
    const out = await durableRun(store, { ...base, input: 'SHA' }, program);
    expect(out).toMatchObject({ status: 'done', value: 'flights to SHA', input_used: true });
    expect(searches).toBe(1);
  });

  it('types values that are not JSON through a codec, the same on the first run and on a replay', async () => {
    const { base } = await session();
    const date = {
      encode: (d: Date) => d.toISOString(),
      decode: (json: JsonValue) => new Date(String(json)),
    };
    const seen: Date[] = [];
    const program = (interrupt: boolean) => async (ctx: DurableContext) => {
      const when = await ctx.step('when', () => new Date('2026-12-11T08:00:00.000Z'), { codec: date });
      seen.push(when);
      if (interrupt) throw new AgentStateError('store_unavailable', 'gone');
      return when;
    };
    await expect(
      durableRun(store, { ...base, result: { codec: date } }, program(true)),
    ).rejects.toMatchObject({
      code: 'store_unavailable',
    });
    const out = await durableRun(store, { ...base, result: { codec: date } }, program(false));
    expect(seen.map((d) => d instanceof Date && d.toISOString())).toEqual([
      '2026-12-11T08:00:00.000Z',
      '2026-12-11T08:00:00.000Z',
    ]);
    expect(out.status === 'done' && out.value instanceof Date && out.value.getTime()).toBe(
      seen[0]?.getTime(),
    );
  });

  it('answers a finished run again for its key without running it again', async () => {
    const { base } = await session();
    let runs = 0;
    const program = async (ctx: DurableContext) =>
      ctx.action('book', null, {
        run: async () => {
          runs++;
          return 'booked';
        },
      });
    const first = await durableRun(store, { ...base, key: 'order-1' }, program);
    const again = await durableRun(store, { ...base, key: 'order-1' }, program);
    expect(again).toMatchObject({ status: 'done', value: 'booked', task_id: first.task_id, resumed: false });
    expect(runs).toBe(1);
    const other = await durableRun(store, { ...base, key: 'order-2' }, program);
    expect(other.task_id).not.toBe(first.task_id);
    expect(runs).toBe(2);
  });

  it('lets one run of a session go at a time: a second call gets conflict', async () => {
    const { base } = await session();
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started: () => void = () => undefined;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const first = durableRun(store, base, async (ctx) => {
      await ctx.step('hold', async () => {
        started();
        await held;
        return 1;
      });
      return 'first';
    });
    await running;
    await expect(durableRun(store, base, async () => 'second')).rejects.toMatchObject({ code: 'conflict' });
    release();
    expect(await first).toMatchObject({ status: 'done', value: 'first' });
  });

  it('keeps the deadline of a sleep: a resumed run sleeps until the first attempt said, by the run clock', async () => {
    const { scope, base } = await session();
    const clock = new ManualClock('2026-12-01T20:00:00.000Z');
    const start = clock.now();
    const program = (interrupt: boolean) => async (ctx: DurableContext) => {
      await ctx.sleep(20);
      if (interrupt) throw new AgentStateError('store_unavailable', 'the store went away');
      return ctx.now();
    };
    await expect(durableRun(store, { ...base, clock }, program(true))).rejects.toMatchObject({
      code: 'store_unavailable',
    });
    clock.advance(3_600_000);
    const out = await durableRun(store, { ...base, clock }, program(false));
    expect(out).toMatchObject({ status: 'done', value: start + 3_600_000, resumed: true });
    const last = await store.latestCheckpoint(scope, out.run_id);
    const journal = last?.channels.journal;
    expect(Array.isArray(journal) ? journal.filter((e) => (e as { k: string }).k === 'sleep') : null).toEqual(
      [{ k: 'sleep', v: start + 20 }],
    );
    await expect(
      durableRun(store, base, async (ctx) => {
        await ctx.sleep(-1);
        return null;
      }),
    ).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('sleep'),
    });
  });

  it('records nothing once the run is over', async () => {
    const { base } = await session();
    let kept: DurableContext | null = null;
    const out = await durableRun(store, base, async (ctx) => {
      kept = ctx;
      return 'over';
    });
    expect(out).toMatchObject({ status: 'done', value: 'over' });
    const late = (kept as DurableContext | null)?.step('late', () => 1);
    await expect(late).rejects.toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('over'),
    });
  });

  it('refuses a replay whose code asks for something else than was recorded', async () => {
    const { base } = await session();
    await expect(
      durableRun(store, base, async (ctx) => {
        await ctx.step('a', () => 1);
        throw new AgentStateError('store_unavailable', 'gone');
      }),
    ).rejects.toMatchObject({ code: 'store_unavailable' });
    await expect(durableRun(store, base, async (ctx) => ctx.step('b', () => 2))).rejects.toMatchObject({
      code: 'internal',
      message: expect.stringContaining('replay diverged'),
    });
  });

  it('refuses bad options and values that cannot be recorded with invalid_request', async () => {
    const { scope, base } = await session();
    const ok = async () => null;
    await expect(durableRun(store, { ...base, name: '' }, ok)).rejects.toMatchObject({
      code: 'invalid_request',
    });
    await expect(
      durableRun(store, { scope: { tenant_id: 'x' } as unknown as Scope, sessionId: base.sessionId }, ok),
    ).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('scope') });
    await expect(
      durableRun(store, { ...base, input: { when: new Date() } as unknown as null }, ok),
    ).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('input.when') });
    await expect(durableRun(store, { ...base, sessionId: newId('session') }, ok)).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(
      durableRun(store, base, async (ctx) =>
        ctx.step('when', () => new Date(), { schema: z.date() }).then((d) => d.toISOString()),
      ),
    ).rejects.toMatchObject({ code: 'invalid_request', message: expect.stringContaining('step when') });
    const parallel = await durableRun(store, { ...base, name: 'parallel' }, async (ctx) => {
      const both = await Promise.all([ctx.step('x', () => 1), ctx.step('y', () => 2)]);
      return both;
    }).catch((error: unknown) => error);
    expect(parallel).toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining('one at a time'),
    });
    expect((await store.listTasks(scope, { state: 'DONE' })).items).toEqual([]);
  });
});
