/**
 * The run's first checkpoint is written while the run goes on (its round trip overlaps the model's work);
 * the next commit waits for it, a failed write fails the turn and stores nothing of it, and a run that fails
 * meanwhile lets its lease go only after the write landed.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry, type Model } from '../../src/models/types.js';
import { runTurn } from '../../src/runtime/turn.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import { openSqliteStore } from '../../src/store/sqlite/index.js';
import type { StateStore } from '../../src/store/types.js';
import { callName, crashingStore } from './faults.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());

interface Gate {
  readonly events: string[];
  /** Lets the held checkpoint write go on (or fail with `error`). */
  open(error?: Error): void;
}

/** The SQLite store with its first `putCheckpoint` held until the gate opens; store calls are logged. */
function gated(store: StateStore): { store: StateStore; gate: Gate } {
  const events: string[] = [];
  let release: (error?: Error) => void = () => undefined;
  const held = new Promise<Error | undefined>((resolve) => {
    release = resolve;
  });
  let first = true;
  const proxy = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        const name = callName(property, args);
        if (name === 'putCheckpoint' && first) {
          first = false;
          events.push('putCheckpoint:sent');
          const error = await held;
          if (error !== undefined) {
            events.push('putCheckpoint:failed');
            throw error;
          }
          const done = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          events.push('putCheckpoint:stored');
          return done;
        }
        events.push(name);
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
  return { store: proxy, gate: { events, open: (error) => release(error) } };
}

/** The rules model, logging each extraction; the gate opens from inside it (or it throws). */
function watchedModel(gate: Gate, onExtract: () => void): Model {
  const model = createRulesModel();
  return new Proxy(model, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'extract' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        gate.events.push('model.extract');
        onExtract();
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
}

async function setUp(name: string) {
  const sqlite = await openSqliteStore(join(temp.dir, `${name}.db`));
  const scope = freshScope();
  const session = await sqlite.createSession(scope, { agent: 'flight_booking' });
  const { store, gate } = gated(sqlite);
  const tools = ledgerTools(join(temp.dir, `${name}.jsonl`));
  return { sqlite, store, gate, scope, session, tools };
}

describe('the run’s first checkpoint, deferred', () => {
  it('is written while the model works, and stored before the final commit', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('overlap');
    const model = watchedModel(gate, () => gate.open());
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      models: createModelRegistry([model]),
      input: 'book a flight',
    });
    expect(out.reply).toBe('Where are you flying from?');
    const sent = gate.events.indexOf('putCheckpoint:sent');
    const extract = gate.events.indexOf('model.extract');
    const stored = gate.events.indexOf('putCheckpoint:stored');
    const commit = gate.events.indexOf('commitTurn');
    expect(sent).toBeGreaterThanOrEqual(0);
    expect(extract).toBeGreaterThan(sent); // the run went on while the write was held
    expect(stored).toBeGreaterThan(extract);
    expect(commit).toBeGreaterThan(stored); // the final commit waited for it
    const checkpoints = await sqlite.listCheckpoints(scope, out.run_id);
    expect(checkpoints.items.map((c) => c.label).sort()).toEqual(['start', 'turn']);
    await sqlite.close();
  });

  it('fails the turn when its write fails, and stores nothing of the turn', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('failed');
    const model = watchedModel(gate, () => gate.open(new Error('the disk is full')));
    const failed = runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      models: createModelRegistry([model]),
      input: 'book a flight',
    });
    await expect(failed).rejects.toThrow('the disk is full');
    expect(gate.events).not.toContain('commitTurn');
    expect(await sqlite.listMessages(scope, session.id)).toEqual([]);
    expect((await sqlite.listTasks(scope, {})).items).toEqual([]);
    // The lease was let go: the next turn runs at once, as the first.
    const next = await runTurn({
      ...runtimeOptions(sqlite, scope, session.id, tools),
      input: 'book a flight',
    });
    expect(next.reply).toBe('Where are you flying from?');
    await sqlite.close();
  });

  it('lands before the lease is let go when the run fails meanwhile', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('run-failed');
    const model = watchedModel(gate, () => {
      setTimeout(() => gate.open(), 50);
      throw new Error('the model is down');
    });
    const failed = runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      models: createModelRegistry([model]),
      input: 'book a flight',
    });
    await expect(failed).rejects.toThrow('the model is down');
    const stored = gate.events.indexOf('putCheckpoint:stored');
    expect(stored).toBeGreaterThan(gate.events.indexOf('model.extract'));
    expect(gate.events.indexOf('releaseLease')).toBeGreaterThan(stored);
    // What it stored is the interrupted run's start: the next turn with the same input finishes that run.
    const next = await runTurn({
      ...runtimeOptions(sqlite, scope, session.id, tools),
      input: 'book a flight',
    });
    expect(next.resumed).toBe(true);
    expect(next.reply).toBe('Where are you flying from?');
    expect((await sqlite.listMessages(scope, session.id)).map((m) => m.role)).toEqual(['user', 'assistant']);
    await sqlite.close();
  });

  it('is stored before a later run touches an action an earlier run left PENDING', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const ledger = join(temp.dir, 'orphan.jsonl');
    const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const options = (on: StateStore) => runtimeOptions(on, scope, session.id, ledgerTools(ledger));
    // The run dies inside its fourth step: the action is PENDING, the task EXECUTING.
    await expect(
      runTurn({ ...options(crashingStore(store, 7, 'after')), input: 'deploy web' }),
    ).rejects.toThrow();
    const calls = readLedger(ledger).length;
    const [pending] = (await store.listActions(scope, { status: 'PENDING' })).items;
    expect(pending).toBeDefined();
    // A message appended meanwhile: the next turn is a new run, which takes the orphaned step up at once.
    await store.appendMessages(scope, session.id, [{ role: 'user', content: 'a note from an operator' }]);
    const events: string[] = [];
    let first = true;
    const failing = new Proxy(store, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          events.push(callName(property, args));
          if (callName(property, args) === 'putCheckpoint' && first) {
            first = false;
            await new Promise((resolve) => setTimeout(resolve, 30));
            throw new Error('the disk is full');
          }
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    await expect(runTurn({ ...options(failing), input: 'status?' })).rejects.toThrow('the disk is full');
    // Nothing of the failed turn: no call of the tool, no attempt counted, the action as it was.
    expect(events.slice(0, 3)).toEqual(['acquireLease', 'getSessionHead', 'putCheckpoint']);
    expect(events).not.toContain('recordAttempt');
    expect(events).not.toContain('markActionUnknown');
    expect(readLedger(ledger)).toHaveLength(calls);
    expect(await store.getAction(scope, pending?.id ?? '')).toEqual(pending);
  });
});
