/**
 * Turns of one process go on oldest first: the scheduler itself, and through the HTTP layer's turn runner and
 * createAgentRuntime a booking whose airline answers while a newer turn runs, which must go on before the newer
 * turn finishes.
 */
import { describe, expect, it } from 'vitest';
import { createBuiltinAgents } from '../../src/agents/index.js';
import { ManualClock } from '../../src/core/clock.js';
import type { JsonObject } from '../../src/core/json.js';
import type { Session } from '../../src/core/model.js';
import { JsonValueSchema } from '../../src/core/model.js';
import { createRuntimeTurnRunner } from '../../src/http/runtime-runner.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { createAgentRuntime } from '../../src/runtime/runtime.js';
import { createToolRegistry, type Tool } from '../../src/runtime/tool.js';
import { scheduledStore, TurnScheduler } from '../../src/runtime/turn-scheduler.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { callName } from './faults.js';
import { freshScope, START } from './setup.js';

const nextCheckPhase = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('TurnScheduler', () => {
  it('lets a turn alone go on at once, without waiting for the event loop', () => {
    const scheduler = new TurnScheduler();
    const slot = scheduler.admit();
    expect(slot.step()).toBeUndefined();
    slot.end();
    expect(scheduler.active).toBe(0);
  });

  it('resumes waiting turns oldest first, one per pass of the event loop', async () => {
    const scheduler = new TurnScheduler();
    const slots = [scheduler.admit(), scheduler.admit(), scheduler.admit(), scheduler.admit()];
    const order: number[] = [];
    // They ask in the order 3, 1, 2, 0.
    const waits = [3, 1, 2, 0].map((i) => {
      const waited = slots[i]?.step();
      if (waited === undefined) throw new Error(`turn ${i} did not wait`);
      return waited.then(() => order.push(i));
    });
    await nextCheckPhase();
    expect(order).toEqual([0]);
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3]);
  });

  it('stops counting a turn once it has ended (twice is harmless)', () => {
    const scheduler = new TurnScheduler();
    const older = scheduler.admit();
    const newer = scheduler.admit();
    expect(scheduler.active).toBe(2);
    older.end();
    older.end();
    expect(scheduler.active).toBe(1);
    expect(newer.step()).toBeUndefined();
  });

  it('passes the store through: same results, same errors, properties as they are', async () => {
    const store = createMemoryStore({ clock: new ManualClock(START) });
    const scheduler = new TurnScheduler();
    const busy = scheduler.admit();
    const slot = scheduler.admit();
    const seen = scheduledStore(store, slot);
    const scope = freshScope();
    expect(seen.adapter).toBe(store.adapter);
    const session = await seen.createSession(scope, { agent: 'flight_booking' });
    expect(await seen.getSession(scope, session.id)).toEqual(session);
    await expect(
      seen.updateSession(scope, session.id, session.version + 5, { agent: 'x' }),
    ).rejects.toMatchObject({ code: 'version_conflict' });
    expect(await store.getSession(scope, session.id)).toEqual(session);
    busy.end();
    slot.end();
    await store.close();
  });
});

/** `airline.book` that waits until the test lets it answer, as a downstream whose answer arrives later. */
function gatedAirline(): { tool: Tool; entered: Promise<void>; answer: () => void } {
  let enter: () => void = () => {};
  let release: () => void = () => {};
  const entered = new Promise<void>((resolve) => {
    enter = resolve;
  });
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const tool: Tool = {
    name: 'airline.book',
    description: 'books a flight when the test says so',
    params: JsonValueSchema,
    async execute(params) {
      enter();
      await released;
      const input = (params ?? {}) as JsonObject;
      return { booking_id: `BK-${String(input.date ?? '')}` };
    },
  };
  return { tool, entered, answer: release };
}

type Entry = 'the HTTP turn runner' | 'createAgentRuntime';

interface TurnAnswer {
  readonly reply: string;
  readonly tasks: readonly { readonly state: string }[];
}

/** One turn through either entry point, with the same store, tools and clock. */
function turnsThrough(
  entry: Entry,
  store: StateStore,
  tools: Tool[],
  clock: ManualClock,
): (scope: Scope, session: Session, input: string) => Promise<TurnAnswer> {
  const setup = {
    agents: createBuiltinAgents(),
    models: createModelRegistry([createRulesModel()]),
    tools: createToolRegistry(tools),
    clock,
  };
  if (entry === 'createAgentRuntime') {
    const runtime = createAgentRuntime({ store, ...setup });
    return (scope, session, input) => runtime.turn(scope, session.id, input);
  }
  const runner = createRuntimeTurnRunner(store, setup);
  return (scope, session, input) => runner.runTurn(scope, session, input);
}

describe.each<Entry>(['the HTTP turn runner', 'createAgentRuntime'])('turns through %s', (entry) => {
  it("a booking whose answer arrives while a newer turn runs finishes before that turn's next steps", async () => {
    const clock = new ManualClock(START);
    const memory = createMemoryStore({ clock });
    const calls: string[] = [];
    const older = freshScope();
    const newer = freshScope();
    const airline = gatedAirline();
    // Once the newer turn has made its first store call, the airline answers (from the event loop, as I/O).
    const store = new Proxy(memory, {
      get(target, property, receiver) {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const scope = args[0] as { user_id?: string } | undefined;
          const who =
            scope?.user_id === older.user_id ? 'older' : scope?.user_id === newer.user_id ? 'newer' : '';
          if (who === 'newer' && !calls.includes('newer')) setImmediate(airline.answer);
          calls.push(who);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }) as StateStore;
    const turn = turnsThrough(entry, store, [airline.tool], clock);
    const first = await memory.createSession(older, { agent: 'flight_booking' });
    for (const input of [
      'book a flight from Beijing to Shanghai',
      'on 2027-03-04',
      'economy class please',
      'my name is Ada Lovelace',
    ]) {
      await turn(older, first, input);
    }
    const second = await memory.createSession(newer, { agent: 'flight_booking' });

    const ended: string[] = [];
    calls.length = 0;
    const booking = turn(older, first, 'yes').then((out) => {
      ended.push('older');
      return out;
    });
    await airline.entered;
    const other = turn(newer, second, 'book a flight from Paris to Tokyo').then((out) => {
      ended.push('newer');
      return out;
    });
    const [booked, asked] = await Promise.all([booking, other]);

    expect(booked.reply).toMatch(/[Rr]eference/);
    expect(booked.tasks[0]?.state).toBe('DONE');
    expect(asked.tasks[0]?.state).toBe('COLLECTING');
    expect(ended).toEqual(['older', 'newer']);
    // After the airline answered, every store call of the booking came before the newer turn's next one.
    const firstNewer = calls.indexOf('newer');
    const rest = calls.slice(firstNewer + 1);
    const lastOlder = rest.lastIndexOf('older');
    expect(lastOlder).toBeGreaterThan(-1);
    expect(rest.slice(0, lastOlder + 1).every((who) => who === 'older')).toBe(true);
    await memory.close();
  });
});

describe.each<Entry>(['the HTTP turn runner', 'createAgentRuntime'])(
  'caches across turns through %s',
  (entry) => {
    it("the compaction check reads a session's history once, not on every turn", async () => {
      const clock = new ManualClock(START);
      const memory = createMemoryStore({ clock });
      const calls: string[] = [];
      const store = new Proxy(memory, {
        get(target, property, receiver) {
          const value: unknown = Reflect.get(target, property, receiver);
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            calls.push(callName(property, args));
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      }) as StateStore;
      const turn = turnsThrough(entry, store, [], clock);
      const scope = freshScope();
      const inputs = ['book a flight from Beijing to Shanghai', 'on 2027-03-04', 'economy'];
      const afterCommit = (calls: string[]) => calls.slice(calls.indexOf('commitTurn') + 1);
      // A session with a message from before: the first turn's check reads the history after the commit
      // (the summary head, the newest messages), without the lease the commit freed: under the threshold it
      // writes nothing; the next ones know it and read nothing after the commit. The final commit frees the
      // lease each time.
      const session = await memory.createSession(scope, { agent: 'flight_booking' });
      await memory.appendMessages(scope, session.id, [{ role: 'user', content: 'hello' }]);
      const perTurn: string[][] = [];
      for (const input of inputs) {
        calls.length = 0;
        await turn(scope, session, input);
        perTurn.push([...calls]);
      }
      // The session's lease and what a turn starts from come with the session's head (its open tasks, and
      // whether its run has a checkpoint to resume from: none here, so no checkpoint read). (The first also reads the user's
      // remembered preferences for the task it creates.) The run's first write is its final commit: its
      // start checkpoint is never written.
      const start = ['getSessionHead'];
      perTurn.forEach((calls, i) => {
        const before = calls.slice(0, calls.indexOf('commitTurn'));
        expect(before).toEqual(i === 0 ? [...start, 'listMemory'] : start);
      });
      // The answer's open tasks come with the final commit (list_open_tasks): no read after it.
      expect(afterCommit(perTurn[0]!)).toEqual(['getMemory', 'lastMessages']);
      for (const later of perTurn.slice(1)) expect(afterCommit(later)).toEqual([]);
      // A new session: nothing above a summary before its first turn, so no turn reads the history.
      const fresh = await memory.createSession(scope, { agent: 'flight_booking' });
      for (const input of inputs) {
        calls.length = 0;
        await turn(scope, fresh, input);
        expect(afterCommit(calls)).toEqual([]);
      }
      await memory.close();
    });
  },
);
