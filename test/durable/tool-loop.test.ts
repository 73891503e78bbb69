/**
 * The plain-code tool-loop agent on durable runs, against a scripted model behind a real Chat Completions
 * server on loopback: in-process, the loop books through the tools, arguments the tool's schema refuses
 * never reach it, and a resumed loop does not ask the model again for an answer it recorded. In child
 * processes killed with SIGKILL (SQLite and PostgreSQL), inside the booking or after a store write, the
 * loop is continued by another process and the booking happens exactly once (counted in the effect log).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineAgentTool, runToolLoop } from '../../src/agents/tool-loop.js';
import { type DurableContext, durableRun } from '../../src/durable/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { jsonLines, resultOf, runChild } from './children.js';
import { type ScriptedModel, startScriptedModel } from './scripted-model.js';
import { freshScope, memoryStore, postgresStore, sqliteStore, type TestStore, tempDir } from './stores.js';

const temp = tempDir();
let model: ScriptedModel;
beforeAll(async () => {
  model = await startScriptedModel();
});
const killStores: TestStore[] = [sqliteStore(temp.dir, 'loop.db'), postgresStore()];
afterAll(async () => {
  await model.close();
  for (const s of killStores) await s.cleanup();
  temp.cleanup();
});
const script = join(import.meta.dirname, 'loop-child.ts');

interface Booking {
  readonly key: string;
  readonly booking_id: string;
  readonly flight_id: string;
  readonly passenger: string;
}

describe('the tool-loop agent in one process (memory:)', () => {
  let store: StateStore;
  beforeAll(async () => {
    store = await memoryStore().open();
  });
  afterAll(async () => {
    await store.close();
  });

  function tools(booked: Booking[], reached: unknown[]) {
    return [
      defineAgentTool({
        name: 'search_flights',
        description: 'Flights between two airports.',
        readOnly: true,
        parameters: z.object({ from: z.string(), to: z.string() }),
        run: async ({ from, to }) => ({ flights: [{ id: 'MU5101', from, to, price: 1200 }] }),
      }),
      defineAgentTool({
        name: 'book_flight',
        description: 'Books a seat.',
        parameters: z.object({ flight_id: z.string(), passenger: z.string().min(1) }),
        run: async (params, key) => {
          reached.push(params);
          const booking = { key, booking_id: `B-${booked.length + 1}`, ...params };
          booked.push(booking);
          return { booking_id: booking.booking_id, flight_id: params.flight_id };
        },
      }),
    ];
  }

  it('books through the tools; refused arguments never reach the tool; the model sees the tools', async () => {
    const scope = freshScope();
    const { id } = await store.createSession(scope, { agent: null });
    const booked: Booking[] = [];
    const reached: unknown[] = [];
    const input = `Book PEK to SHA for Alice (${id})`;
    const offeredBefore = model.offered.length;
    const out = await durableRun(store, { scope, sessionId: id }, async (ctx) => {
      const loop = await runToolLoop(ctx, {
        model: { baseURL: model.url, model: 'scripted', maxRetries: 0 },
        system: 'You book flights.',
        input,
        tools: tools(booked, reached),
      });
      return { reply: loop.reply, calls: loop.tool_calls.map((c) => ({ ...c })) };
    });
    expect(out).toMatchObject({ status: 'done', value: { reply: 'Booked B-1 on MU5101.' } });
    if (out.status !== 'done') return;
    expect(out.value.calls.map((c) => c.name)).toEqual(['search_flights', 'book_flight', 'book_flight']);
    expect(out.value.calls[1]?.result).toEqual({
      error: 'invalid arguments: passenger: Invalid input: expected string, received undefined',
    });
    expect(reached).toEqual([{ flight_id: 'MU5101', passenger: 'Alice' }]);
    expect(model.requests.get(input)).toBe(4);
    expect(model.offered.slice(offeredBefore)).toEqual(Array(4).fill(['search_flights', 'book_flight']));
    const actions = await store.listActions(scope, { task_id: out.task_id });
    expect(actions.items.map((a) => [a.tool, a.status])).toEqual([['book_flight', 'SUCCESS']]);
  });

  it('a loop interrupted by a model outage resumes without asking again for recorded answers, nor booking again', async () => {
    const scope = freshScope();
    const { id } = await store.createSession(scope, { agent: null });
    const booked: Booking[] = [];
    const input = `Book PEK to SHA for Alice (${id})`;
    let modelDown = false;
    const endpoint = {
      model: 'scripted',
      maxRetries: 0,
      get baseURL() {
        return modelDown ? 'http://127.0.0.1:1/v1' : model.url;
      },
    };
    const program = async (ctx: DurableContext) => {
      const [search, book] = tools(booked, []);
      const loop = await runToolLoop(ctx, {
        model: endpoint,
        system: 'You book flights.',
        input,
        tools: [
          search!,
          {
            ...book!,
            run: async (args, key) => {
              const result = await book!.run(args, key);
              modelDown = true; // the endpoint goes away after the booking
              return result;
            },
          },
        ],
      });
      return loop.reply;
    };
    await expect(durableRun(store, { scope, sessionId: id }, program)).rejects.toMatchObject({
      code: 'upstream_unavailable',
    });
    expect(model.requests.get(input)).toBe(3);
    modelDown = false;
    const out = await durableRun(store, { scope, sessionId: id }, program);
    expect(out).toMatchObject({ status: 'done', value: 'Booked B-1 on MU5101.', resumed: true });
    expect(booked).toHaveLength(1);
    expect(model.requests.get(input)).toBe(4);
  });
});

describe.each(killStores)('the tool-loop agent killed with SIGKILL on $name', (testStore) => {
  let store: StateStore;
  beforeAll(async () => {
    store = await testStore.open();
  });
  afterAll(async () => {
    await store.close();
  });

  async function scenario(): Promise<{ scope: Scope; sessionId: string; log: string; args: string[] }> {
    const scope = freshScope();
    const { id } = await store.createSession(scope, { agent: null });
    const log = join(temp.dir, `bookings-${id}.jsonl`);
    const args = [testStore.url ?? '', scope.tenant_id, scope.user_id, id, log, model.url];
    return { scope, sessionId: id, log, args };
  }

  /** The child's store writes: start, model, search, model, model, book begun, book done, model, done. */
  const kills = [
    'write:2',
    'write:3',
    'book_flight:before_effect',
    'book_flight:after_effect',
    'write:6',
    'write:7',
    'write:9',
  ];
  it.each(kills)(
    'killed at %s, the loop is continued by another process and books exactly once',
    async (killAt) => {
      const { scope, sessionId, log, args } = await scenario();
      const killed = await runChild(script, args, { DURABLE_KILL_AT: killAt });
      expect(killed.signal, killed.stderr).toBe('SIGKILL');
      expect(killed.events.at(-1)).toEqual({ event: 'point', point: killAt });
      const result = resultOf(await runChild(script, args));
      const bookings = jsonLines<Booking>(log);
      expect(bookings).toHaveLength(1);
      expect(bookings[0]).toMatchObject({ flight_id: 'MU5101', passenger: 'Alice' });
      expect(result).toMatchObject({
        status: 'done',
        value: { reply: `Booked ${bookings[0]?.booking_id} on MU5101.` },
      });
      const input = `Book the cheapest flight from PEK to SHA for Alice (${sessionId})`;
      // Every model answer stored before the kill is replayed; one asked for and not yet stored is asked again.
      const asked = model.requests.get(input) ?? 0;
      if (killAt.startsWith('book_flight')) expect(asked).toBe(4);
      else expect(asked).toBeLessThanOrEqual(5);
      const tasks = await store.listTasks(scope, { session_id: sessionId });
      const actions = await store.listActions(scope, { task_id: tasks.items[0]?.id ?? '' });
      const book = actions.items.filter((a) => a.tool === 'book_flight');
      expect(book).toMatchObject([{ status: 'SUCCESS', idempotency_key: bookings[0]?.key }]);
    },
    60_000,
  );
});
