/**
 * What a booking turn asks of its store: the confirming turn begins the airline call without looking its
 * idempotency key up first (no action of the round can exist while the task's move to EXECUTING is still
 * unwritten), and writes the user's choices and lists the open tasks with its final commit. A run killed
 * right after the begin commit still resumes to one booking.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/core/clock.js';
import { runTurn } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { StateStore } from '../../src/store/types.js';
import { callName, crashingStore, SimulatedCrash } from './faults.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, START, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

/** The store's calls made through it, by name. */
function recording(store: StateStore): { store: StateStore; calls: string[] } {
  const calls: string[] = [];
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        calls.push(callName(property, args));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as StateStore;
  return { store: proxy, calls };
}

const INPUTS = ['Book a flight from Beijing to Shanghai next Wednesday', 'business class', 'Ada Lovelace'];

describe('a booking turn', () => {
  it('begins the airline call with no key lookup, and remembers with its final commit', async () => {
    const clock = new ManualClock(START);
    const store = createMemoryStore({ clock });
    const scope = freshScope();
    const ledger = join(temp.dir, 'reads.jsonl');
    const tools = ledgerTools(ledger);
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    for (const input of INPUTS)
      await runTurn({ ...runtimeOptions(store, scope, session.id, tools, clock), input });
    const seen = recording(store);
    const booked = await runTurn({
      ...runtimeOptions(seen.store, scope, session.id, tools, clock),
      input: 'yes',
    });
    expect(booked.tasks[0]?.state).toBe('DONE');
    expect(seen.calls).not.toContain('getActionByKey');
    expect(seen.calls).not.toContain('putMemory');
    expect(seen.calls.filter((call) => call === 'commitTurn')).toHaveLength(2);
    expect(seen.calls.slice(seen.calls.lastIndexOf('commitTurn') + 1)).not.toContain('listTasks');
    expect((await store.getMemory(scope, 'preferences', 'flight_booking.cabin_class'))?.value).toBe(
      'business',
    );
    expect(readLedger(ledger)).toHaveLength(1);
    await store.close();
  });

  it('killed right after the begin commit, the next turn finishes it with one booking', async () => {
    const clock = new ManualClock(START);
    const store = createMemoryStore({ clock });
    const scope = freshScope();
    const ledger = join(temp.dir, 'crash.jsonl');
    const tools = ledgerTools(ledger);
    const session = await store.createSession(scope, {
      agent: 'flight_booking',
      context: { language: 'en' },
    });
    for (const input of INPUTS)
      await runTurn({ ...runtimeOptions(store, scope, session.id, tools, clock), input });
    // The confirming turn's first commit (the checkpoint before the airline call, with the begin) is
    // applied, then the run dies before calling the airline.
    const dying = crashingStore(store, 1, 'after');
    await expect(
      runTurn({ ...runtimeOptions(dying, scope, session.id, tools, clock), input: 'yes' }),
    ).rejects.toBeInstanceOf(SimulatedCrash);
    expect(readLedger(ledger)).toHaveLength(0);
    clock.advance(60_000);
    const again = await runTurn({ ...runtimeOptions(store, scope, session.id, tools, clock), input: 'yes' });
    expect(again.tasks[0]?.state).toBe('DONE');
    expect(readLedger(ledger)).toHaveLength(1);
    const actions = (await store.listActions(scope, {})).items;
    expect(actions.map((a) => a.status)).toEqual(['SUCCESS']);
    await store.close();
  });
});
