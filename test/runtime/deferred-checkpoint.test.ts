/**
 * The run's first checkpoint is deferred: a run that stores nothing else before its final commit never
 * writes it (one write per turn, not two); a run that takes longer, streams text or begins an action writes
 * it first, while the run goes on (its round trip overlaps the model's work). The next commit waits for it,
 * a failed write fails the turn and stores nothing of it, and a run that fails meanwhile lets its lease go
 * only after the write landed.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bookingInputs } from '../../src/bench/turn/bench.js';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry, type Model } from '../../src/models/types.js';
import { DEFERRED_CHECKPOINT_MS } from '../../src/runtime/run-context.js';
import { runIdFor, runTurn } from '../../src/runtime/turn.js';
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

/**
 * The rules model, logging each extraction; the gate opens from inside it (or it throws). `slowMs`: the
 * extraction takes that long first (logged as `model.extract:done` when over), as a hosted model would.
 */
function watchedModel(gate: Gate, onExtract: () => void, slowMs = 0): Model {
  const model = createRulesModel();
  return new Proxy(model, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (property !== 'extract' || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        gate.events.push('model.extract');
        if (slowMs > 0) {
          await new Promise((resolve) => setTimeout(resolve, slowMs));
          gate.events.push('model.extract:done');
        }
        onExtract();
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
}

/** The kinds of a checkpoint's journal entries. */
function journalKinds(channels: Record<string, unknown>): string[] {
  return (channels.journal as { k: string }[]).map((entry) => entry.k);
}

async function setUp(name: string) {
  const sqlite = await openSqliteStore(join(temp.dir, `${name}.db`));
  const scope = freshScope();
  const session = await sqlite.createSession(scope, { agent: 'flight_booking' });
  const { store, gate } = gated(sqlite);
  const tools = ledgerTools(join(temp.dir, `${name}.jsonl`));
  return { sqlite, store, gate, scope, session, tools };
}

/** The next turn with the same input resumes the interrupted run and finishes it, once. */
async function expectRunFinished(setup: Omit<Awaited<ReturnType<typeof setUp>>, 'store' | 'gate'>) {
  const { sqlite, scope, session, tools } = setup;
  const next = await runTurn({ ...runtimeOptions(sqlite, scope, session.id, tools), input: 'book a flight' });
  expect(next.resumed).toBe(true);
  expect(next.reply).toBe('Where are you flying from?');
  expect((await sqlite.listMessages(scope, session.id)).map((m) => m.role)).toEqual(['user', 'assistant']);
}

describe('the run’s first checkpoint, deferred', () => {
  it('is never written when the final commit is the run’s first write', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('folded');
    // However long a loaded machine takes to reach the final commit (the default wait is 50 ms).
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      checkpointDeferMs: 600_000,
      input: 'book a flight',
    });
    expect(out.reply).toBe('Where are you flying from?');
    expect(gate.events).not.toContain('putCheckpoint:sent');
    expect(gate.events.filter((name) => name === 'commitTurn')).toHaveLength(1);
    // The final checkpoint is the run's first: its journal holds what a run without the start records.
    const checkpoints = await sqlite.listCheckpoints(scope, out.run_id);
    expect(checkpoints.items.map((c) => [c.label, c.step, c.parent_id])).toEqual([['turn', 0, null]]);
    const kinds = journalKinds(checkpoints.items[0]?.channels ?? {});
    expect(kinds.filter((kind) => kind === 'commit')).toHaveLength(1);
    expect(kinds.filter((kind) => kind === 'commit.result')).toHaveLength(0);
    // Its events, all with the final commit: the run's start first, its end last, one checkpoint.
    const types = (await sqlite.listRunEvents(scope, session.id, out.run_id)).map((event) => event.type);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    expect(types.filter((type) => type === 'checkpoint.created')).toHaveLength(1);
    await sqlite.close();
  });

  it('is taken into the run’s first commit with a batch: a booking’s confirming turn', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('booking');
    const date = new Date(Date.now() + 120 * 86_400_000).toISOString().slice(0, 10);
    const inputs = bookingInputs(date);
    for (const input of inputs.slice(0, -1))
      await runTurn({ ...runtimeOptions(sqlite, scope, session.id, tools), input });
    gate.open();
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      checkpointDeferMs: 600_000, // however long a loaded machine takes to the booking's commit
      input: inputs.at(-1) ?? '',
    });
    expect(out.actions.map((action) => [action.tool, action.status])).toEqual([['airline.book', 'SUCCESS']]);
    // No checkpoint alone before the commit that begins the booking: that commit is the run's first write.
    const writes = gate.events.filter((name) => name === 'commitTurn' || name === 'putCheckpoint:sent');
    expect(writes[0]).toBe('commitTurn');
    const checkpoints = (await sqlite.listCheckpoints(scope, out.run_id)).items.reverse();
    expect(checkpoints.map((c) => c.step)).toEqual(checkpoints.map((_, i) => i));
    expect(checkpoints[0]?.label).not.toBe('start');
    expect(checkpoints[0]?.parent_id).toBeNull();
    const first = journalKinds(checkpoints[0]?.channels ?? {});
    expect(first.filter((kind) => kind === 'commit')).toHaveLength(1);
    expect(first.filter((kind) => kind === 'commit.result')).toHaveLength(0);
    const types = (await sqlite.listRunEvents(scope, session.id, out.run_id)).map((event) => event.type);
    expect(types[0]).toBe('run.started');
    expect(types.at(-1)).toBe('run.completed');
    expect(readLedger(join(temp.dir, 'booking.jsonl')).map((line) => line.tool)).toEqual(['airline.book']);
    await sqlite.close();
  });

  it('is written while a slow model works, and stored before the final commit', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('overlap');
    const model = watchedModel(gate, () => gate.open(), DEFERRED_CHECKPOINT_MS + 50);
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      models: createModelRegistry([model]),
      input: 'book a flight',
    });
    expect(out.reply).toBe('Where are you flying from?');
    const sent = gate.events.indexOf('putCheckpoint:sent');
    const extracted = gate.events.indexOf('model.extract:done');
    const stored = gate.events.indexOf('putCheckpoint:stored');
    const commit = gate.events.indexOf('commitTurn');
    expect(sent).toBeGreaterThan(gate.events.indexOf('model.extract'));
    expect(extracted).toBeGreaterThan(sent); // sent while the model worked, held by the gate
    expect(stored).toBeGreaterThan(extracted);
    expect(commit).toBeGreaterThan(stored); // the final commit waited for it
    const checkpoints = await sqlite.listCheckpoints(scope, out.run_id);
    expect(checkpoints.items.map((c) => [c.label, c.step]).sort()).toEqual([
      ['start', 0],
      ['turn', 1],
    ]);
    // Its events: run.started went with the start, the rest with the final commit.
    const events = await sqlite.listRunEvents(scope, session.id, out.run_id);
    expect(events[0]?.type).toBe('run.started');
    expect(events.at(-1)?.type).toBe('run.completed');
    await sqlite.close();
  });

  it('fails the turn when its write fails, and stores nothing of the turn', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('failed');
    const model = watchedModel(
      gate,
      () => gate.open(new Error('the disk is full')),
      DEFERRED_CHECKPOINT_MS + 50,
    );
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

  it('is written when the final commit fails: the next turn with the same input finishes the run', async () => {
    const sqlite = await openSqliteStore(join(temp.dir, 'final-failed.db'));
    const scope = freshScope();
    const session = await sqlite.createSession(scope, { agent: 'flight_booking' });
    const tools = ledgerTools(join(temp.dir, 'final-failed.jsonl'));
    const calls: string[] = [];
    let failNext = true;
    const failing = new Proxy(sqlite, {
      get(target, property, receiver) {
        const value = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const name = callName(property, args);
          calls.push(name);
          if (name === 'commitTurn' && failNext) {
            failNext = false;
            throw new Error('the connection dropped');
          }
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    });
    const failed = runTurn({ ...runtimeOptions(failing, scope, session.id, tools), input: 'book a flight' });
    await expect(failed).rejects.toThrow('the connection dropped');
    // The run's start, written after the final commit failed: the run is there to be finished.
    expect(calls.slice(calls.indexOf('commitTurn'))).toEqual([
      'commitTurn',
      'putCheckpoint',
      'appendRunEvents',
      'releaseLease',
    ]);
    const runs = await sqlite.listCheckpoints(scope, runIdFor(session.id, 0));
    expect(runs.items.map((c) => c.label)).toEqual(['start']);
    const events = await sqlite.listRunEvents(scope, session.id, runIdFor(session.id, 0));
    expect(events.map((event) => event.type)).toEqual([
      'run.started',
      'message.delta',
      'run.waiting',
      'checkpoint.created',
      'run.failed',
    ]);
    await expectRunFinished({ sqlite, scope, session, tools });
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
    await expectRunFinished({ sqlite, scope, session, tools });
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
    expect(events.slice(0, 2)).toEqual(['getSessionHead', 'putCheckpoint']);
    expect(events).not.toContain('recordAttempt');
    expect(events).not.toContain('markActionUnknown');
    expect(readLedger(ledger)).toHaveLength(calls);
    expect(await store.getAction(scope, pending?.id ?? '')).toEqual(pending);
  });

  it('waits as long as checkpointDeferMs says: a slow model then takes it into the final commit', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('longer');
    const model = watchedModel(gate, () => gate.open(), DEFERRED_CHECKPOINT_MS + 50);
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      models: createModelRegistry([model]),
      checkpointDeferMs: 60_000,
      input: 'book a flight',
    });
    expect(out.reply).toBe('Where are you flying from?');
    expect(gate.events).toContain('model.extract:done');
    expect(gate.events).not.toContain('putCheckpoint:sent');
    const checkpoints = await sqlite.listCheckpoints(scope, out.run_id);
    expect(checkpoints.items.map((c) => [c.label, c.step, c.parent_id])).toEqual([['turn', 0, null]]);
    await sqlite.close();
  });

  it('is written on its own at once with checkpointDeferMs 0, while the model works', async () => {
    const { sqlite, store, gate, scope, session, tools } = await setUp('at-once');
    const model = watchedModel(gate, () => gate.open(), 20);
    const out = await runTurn({
      ...runtimeOptions(store, scope, session.id, tools),
      models: createModelRegistry([model]),
      checkpointDeferMs: 0,
      input: 'book a flight',
    });
    expect(out.reply).toBe('Where are you flying from?');
    expect(gate.events.indexOf('putCheckpoint:sent')).toBeLessThan(gate.events.indexOf('model.extract:done'));
    const checkpoints = await sqlite.listCheckpoints(scope, out.run_id);
    expect(checkpoints.items.map((c) => [c.label, c.step]).sort()).toEqual([
      ['start', 0],
      ['turn', 1],
    ]);
    await sqlite.close();
  });

  it('refuses a checkpointDeferMs that is not a whole number of ms up to an hour, storing nothing', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const session = await store.createSession(scope, { agent: 'flight_booking' });
    const tools = ledgerTools(join(temp.dir, 'defer-refused.jsonl'));
    for (const bad of [-1, 1.5, Number.NaN, 3_600_001]) {
      const refused = runTurn({
        ...runtimeOptions(store, scope, session.id, tools),
        checkpointDeferMs: bad,
        input: 'book a flight',
      });
      await expect(refused).rejects.toThrow(
        `checkpointDeferMs: must be a whole number of ms from 0 to 3600000, got ${bad}`,
      );
    }
    expect(await store.listMessages(scope, session.id)).toEqual([]);
    expect((await store.listTasks(scope, { session_id: session.id })).items).toEqual([]);
    // The lease was let go each time: a good turn runs at once.
    const out = await runTurn({ ...runtimeOptions(store, scope, session.id, tools), input: 'book a flight' });
    expect(out.reply).toBe('Where are you flying from?');
  });
});
