/**
 * Long-term memory through the runtime, on SQLite: a first session books business class for Ada Lovelace;
 * a second session of the same user (new session id, a week later) is offered both again and "yes" fills
 * them; the choices are written by the commit that marks the booking DONE (a run that dies before it
 * leaves none, its resumed run writes them once); another user gets no proposal.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { PREFERENCES, userMemory } from '../../src/memory/index.js';
import { resumeRun, runTurn } from '../../src/runtime/turn.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { Scope, StateStore } from '../../src/store/types.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, START, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

const CABIN_QUESTION = 'Which cabin class: economy, business or first?';

/** Counts the memory items written through it: by putMemory, and by a commit's put_memory. */
function countingStore(store: StateStore): { store: StateStore; puts: () => number } {
  let puts = 0;
  const proxy = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'putMemory') {
        return (...args: Parameters<StateStore['putMemory']>) => {
          puts++;
          return target.putMemory(...args);
        };
      }
      if (prop === 'commitTurn') {
        return async (...args: Parameters<StateStore['commitTurn']>) => {
          const done = await target.commitTurn(...args);
          puts += done.memory?.length ?? 0;
          return done;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { store: proxy, puts: () => puts };
}

describe('memory through the runtime', () => {
  it('remembers a booking, proposes it in a new session, replays without writing twice', async () => {
    const file = join(temp.dir, 'memory.db');
    const ledger = join(temp.dir, 'ledger.jsonl');
    const clock = new ManualClock(START);
    const store = await openSqliteStore(file, { clock });
    const scope = freshScope();
    const tools = ledgerTools(ledger);
    const turnIn = (s: StateStore, sc: Scope, sessionId: string, input: string) =>
      runTurn({ ...runtimeOptions(s, sc, sessionId, tools, clock), input });

    // Session 1: nothing remembered yet, the normal questions.
    const s1 = await store.createSession(scope, { agent: 'flight_booking', context: { language: 'en' } });
    const a1 = await turnIn(store, scope, s1.id, 'Book a flight from Beijing to Shanghai next Wednesday');
    expect(a1.reply).toBe(CABIN_QUESTION);
    clock.advance(60_000);
    expect((await turnIn(store, scope, s1.id, 'business class')).reply).toBe(
      "What is the passenger's full name?",
    );
    clock.advance(60_000);
    expect((await turnIn(store, scope, s1.id, 'Ada Lovelace')).reply).toContain('Shall I book it?');
    clock.advance(60_000);
    // The confirming turn commits twice (before airline.book with the move to EXECUTING; the turn, which
    // writes the booking's result and the user's choices): the last one dies before it is applied, and
    // leaves no memory (it is written by that commit, or not at all).
    const counted1 = countingStore(crashingStore(store, 2, 'before'));
    await expect(turnIn(counted1.store, scope, s1.id, 'yes')).rejects.toBeInstanceOf(SimulatedCrash);
    expect(counted1.puts()).toBe(0);
    const memory = userMemory(store, scope);
    expect(await memory.all(PREFERENCES)).toEqual([]);

    clock.advance(60_000);
    const counted2 = countingStore(store);
    const resumed = await resumeRun(runtimeOptions(counted2.store, scope, s1.id, tools, clock));
    expect(resumed?.resumed).toBe(true);
    expect(resumed?.tasks[0]?.state).toBe('DONE');
    // The resumed run's final commit marks the task DONE and writes both choices, once.
    expect(counted2.puts()).toBe(2);
    const cabin = await memory.get(PREFERENCES, 'flight_booking.cabin_class');
    const name = await memory.get(PREFERENCES, 'flight_booking.passenger_name');
    expect(cabin?.value).toBe('business');
    expect(name?.value).toBe('Ada Lovelace');
    expect(cabin?.updated_at).toBe(resumed?.tasks[0]?.updated_at);
    expect(readLedger(ledger)).toHaveLength(1);
    // Resuming a finished run writes nothing either.
    const counted3 = countingStore(store);
    clock.advance(60_000);
    await resumeRun(runtimeOptions(counted3.store, scope, s1.id, tools, clock));
    expect(counted3.puts()).toBe(0);
    expect((await memory.get(PREFERENCES, 'flight_booking.cabin_class'))?.updated_at).toBe(cabin?.updated_at);
    const items = await memory.all(PREFERENCES);
    expect(items.map((i) => i.key).sort()).toEqual([
      'flight_booking.cabin_class',
      'flight_booking.passenger_name',
    ]);

    // Session 2, a week later: the remembered cabin and name are proposed; "yes" fills them.
    clock.advance(7 * 24 * 3600_000);
    const s2 = await store.createSession(scope, { agent: 'flight_booking', context: { language: 'en' } });
    const b1 = await turnIn(store, scope, s2.id, 'Book a flight from Beijing to Guangzhou next Friday');
    expect(b1.reply).toBe('Business class again?');
    expect(b1.tasks[0]?.slots.cabin_class).toBeUndefined();
    clock.advance(60_000);
    const b2 = await turnIn(store, scope, s2.id, 'yes');
    expect(b2.tasks[0]?.slots.cabin_class).toBe('business');
    expect(b2.reply).toBe('Book for Ada Lovelace again?');
    clock.advance(60_000);
    const b3 = await turnIn(store, scope, s2.id, 'yes');
    expect(b3.tasks[0]?.slots.passenger_name).toBe('Ada Lovelace');
    expect(b3.tasks[0]?.state).toBe('CONFIRMING');
    clock.advance(60_000);
    const b4 = await turnIn(store, scope, s2.id, 'yes');
    expect(b4.tasks[0]?.state).toBe('DONE');
    const lines = readLedger(ledger);
    expect(lines).toHaveLength(2);
    expect(lines[1]?.params).toMatchObject({
      origin: 'BJS',
      destination: 'CAN',
      cabin_class: 'business',
      passenger_name: 'Ada Lovelace',
    });

    // Another user of the same tenant: no proposal.
    const other: Scope = { tenant_id: scope.tenant_id, user_id: `${scope.user_id}_other` };
    const s3 = await store.createSession(other, { agent: 'flight_booking', context: { language: 'en' } });
    const c1 = await turnIn(store, other, s3.id, 'Book a flight from Beijing to Shanghai next Friday');
    expect(c1.reply).toBe(CABIN_QUESTION);
    await store.close();
  });

  it('a "no" drops the proposal and asks the normal question; another value replaces it', async () => {
    const file = join(temp.dir, 'memory-no.db');
    const ledger = join(temp.dir, 'ledger-no.jsonl');
    const clock = new ManualClock(START);
    const store = await openSqliteStore(file, { clock });
    const scope = freshScope();
    const memory = userMemory(store, scope);
    await memory.put(PREFERENCES, 'flight_booking.cabin_class', 'business');
    await memory.put(PREFERENCES, 'flight_booking.passenger_name', 'Ada Lovelace');
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    const turn = (input: string) =>
      runTurn({ ...runtimeOptions(store, scope, session.id, ledgerTools(ledger), clock), input });
    expect((await turn('Book a flight from Beijing to Shanghai next Wednesday')).reply).toBe(
      'Business class again?',
    );
    const no = await turn('no');
    expect(no.reply).toBe(CABIN_QUESTION);
    expect(no.tasks[0]?.slots.cabin_class).toBeUndefined();
    const economy = await turn('economy');
    expect(economy.tasks[0]?.slots.cabin_class).toBe('economy');
    expect(economy.reply).toBe('Book for Ada Lovelace again?');
    const grace = await turn('my name is Grace Hopper');
    expect(grace.tasks[0]?.slots.passenger_name).toBe('Grace Hopper');
    expect(grace.tasks[0]?.state).toBe('CONFIRMING');
    await turn('yes');
    expect((await memory.get(PREFERENCES, 'flight_booking.cabin_class'))?.value).toBe('economy');
    expect((await memory.get(PREFERENCES, 'flight_booking.passenger_name'))?.value).toBe('Grace Hopper');
    await store.close();
  });
});
