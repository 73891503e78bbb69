/**
 * Recovery without a client (issue 32), in one process on the memory store: runs are marked only with
 * `recovery` and only once a tool call is ahead; a pass of the recovery sweeper completes a run whose
 * runner died (a crash simulated at a commit), exactly once when two sweepers run at once; it leaves runs
 * of agents it does not know, removes marks of runs that completed, and frees the lease of its own
 * previous incarnation at once (another instance's lease is waited out).
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRulesModel } from '../../src/models/rules/index.js';
import { createModelRegistry } from '../../src/models/types.js';
import { acquireSessionLease } from '../../src/runtime/lease.js';
import {
  RECOVERY_SCOPE,
  RUN_MARKS_NAMESPACE,
  type RunMark,
  type RunRecoveryOptions,
} from '../../src/runtime/run-marks.js';
import { runTurn } from '../../src/runtime/turn.js';
import { claimInstance } from '../../src/server/recovery/instance.js';
import { type RecoveryOptions, recoverOnce } from '../../src/server/recovery/recover.js';
import { createRuntimeTurnRunner } from '../../src/server/runtime-runner.js';
import { createMemoryStore } from '../../src/store/memory/index.js';
import type { Scope, StateStore, TurnBatch } from '../../src/store/types.js';
import { crashingStore, SimulatedCrash } from './faults.js';
import { ledgerTools, readLedger } from './ledger-tools.js';
import { freshScope, runtimeOptions, tempDir } from './setup.js';

const temp = tempDir();
afterAll(() => temp.cleanup());
let counter = 0;

const A: RunRecoveryOptions = { instanceId: 'host-a', incarnation: 'one' };
const B: RunRecoveryOptions = { instanceId: 'host-b', incarnation: 'one' };

async function marks(store: StateStore): Promise<RunMark[]> {
  const page = await store.listMemory(RECOVERY_SCOPE, RUN_MARKS_NAMESPACE, {});
  return page.items.map((item) => item.value as unknown as RunMark);
}

/** A deploy session of a fresh user whose run a crash before its 6th commit (its first tool done) left interrupted by `who`. */
async function interrupted(store: StateStore, who: RunRecoveryOptions, crashAt = 6) {
  const scope = freshScope();
  const ledger = join(temp.dir, `ledger-${++counter}.jsonl`);
  const tools = ledgerTools(ledger);
  const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
  const options = runtimeOptions(crashingStore(store, crashAt), scope, session.id, tools);
  await expect(runTurn({ ...options, recovery: who, input: 'deploy web' })).rejects.toBeInstanceOf(
    SimulatedCrash,
  );
  return { scope, session, ledger, tools };
}

function recoveryOf(store: StateStore, who: RunRecoveryOptions, ledger: string): RecoveryOptions {
  const base = runtimeOptions(store, freshScope(), 'unused', ledgerTools(ledger));
  const turns = createRuntimeTurnRunner(store, {
    agents: base.agents,
    models: createModelRegistry([createRulesModel()]),
    tools: base.tools,
    ...(base.clock === undefined ? {} : { clock: base.clock }),
    recovery: who,
  });
  return { store, turns, instance: who, agents: ['deploy_pipeline', 'flight_booking'] };
}

describe('run marks', () => {
  it('are written only with `recovery`, only for a run with a tool call ahead, and removed when it completes', async () => {
    const store = createMemoryStore();
    const scope = freshScope();
    const tools = ledgerTools(join(temp.dir, `ledger-${++counter}.jsonl`));
    const session = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const options = runtimeOptions(store, scope, session.id, tools);
    // The library's default: nothing is marked, nothing is left.
    const seen = { put: 0, removed: 0, apart: 0, actionsWithPut: 0 };
    const counting = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'putMemory' || prop === 'deleteMemory') seen.apart++;
        const value = Reflect.get(target, prop, receiver);
        if (prop === 'commitTurn') {
          return (s: Scope, batch: TurnBatch) => {
            const other = batch.other_memory;
            if (other !== undefined) expect(other.scope).toEqual(RECOVERY_SCOPE);
            seen.put += other?.put?.length ?? 0;
            seen.removed += other?.delete?.length ?? 0;
            // The mark goes with the commit that begins the run's first action, none before it.
            if ((other?.put?.length ?? 0) > 0) seen.actionsWithPut += batch.begin_actions?.length ?? 0;
            return target.commitTurn(s, batch);
          };
        }
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await runTurn({ ...options, store: counting, input: 'deploy web' });
    expect(seen).toEqual({ put: 0, removed: 0, apart: 0, actionsWithPut: 0 });
    // With recovery: a turn with no tool call writes no mark; one with tool calls writes one with the commit
    // that begins its first action, and its final commit removes it.
    const other = await store.createSession(scope, { agent: 'deploy_pipeline' });
    const again = runtimeOptions(counting, scope, other.id, tools);
    await runTurn({ ...again, recovery: A, input: 'hello' });
    expect(seen).toEqual({ put: 0, removed: 0, apart: 0, actionsWithPut: 0 });
    await runTurn({ ...again, recovery: A, input: 'deploy web' });
    expect(seen).toEqual({ put: 1, removed: 1, apart: 0, actionsWithPut: 1 });
    expect(await marks(store)).toEqual([]);
  });
});

describe('the recovery sweeper', () => {
  it('completes a run a dead instance left, exactly once with two sweepers at once', async () => {
    const store = createMemoryStore();
    const { scope, session, ledger } = await interrupted(store, { instanceId: 'dead', incarnation: 'x' });
    const [mark] = await marks(store);
    expect(mark).toMatchObject({ session_id: session.id, instance_id: 'dead', agent: 'deploy_pipeline' });
    // Both sweepers share the tools' ledger, as servers share a downstream service.
    const [a, b] = await Promise.all([
      recoverOnce(recoveryOf(store, A, ledger)),
      recoverOnce(recoveryOf(store, B, ledger)),
    ]);
    const done = [...a.recovered, ...b.recovered].filter((run) => run.resumed);
    expect(done).toHaveLength(1);
    expect(done[0]?.took_over).toBe(false);
    const tasks = await store.listTasks(scope, { session_id: session.id });
    expect(tasks.items.map((task) => task.state)).toEqual(['DONE']);
    // Every step once, the one in flight at the crash included.
    const steps = readLedger(ledger).map((line) => line.tool);
    expect(new Set(steps).size).toBe(steps.length);
    expect(await marks(store)).toEqual([]);
    // Nothing is left: the next pass reads the marks and does nothing else.
    expect(await recoverOnce(recoveryOf(store, A, ledger))).toMatchObject({ marks: 0, recovered: [] });
  });

  it("waits out another instance's live lease, and frees its own previous incarnation's at once", async () => {
    const store = createMemoryStore();
    const { scope, session, ledger } = await interrupted(store, A);
    const [mark] = await marks(store);
    // The dead runner's lease, as it would still be held for up to its TTL.
    await acquireSessionLease(store, scope, session.id, mark?.owner as string, 60_000);
    const other = await recoverOnce(recoveryOf(store, B, ledger));
    expect(other).toMatchObject({ marks: 1, busy: 1, recovered: [] });
    const restarted = { instanceId: A.instanceId, incarnation: 'two' };
    const own = await recoverOnce(recoveryOf(store, restarted, ledger));
    expect(own.recovered).toMatchObject([{ resumed: true, took_over: true }]);
    const tasks = await store.listTasks(scope, { session_id: session.id });
    expect(tasks.items.map((task) => task.state)).toEqual(['DONE']);
  });

  it('leaves runs of agents it does not know, and removes marks whose session is gone', async () => {
    const store = createMemoryStore();
    const kept = await interrupted(store, A);
    const gone = await interrupted(store, A);
    const options = { ...recoveryOf(store, B, kept.ledger), agents: ['flight_booking'] };
    expect(await recoverOnce(options)).toMatchObject({ marks: 2, skipped: 2, recovered: [] });
    await store.deleteSession(gone.scope, gone.session.id);
    const report = await recoverOnce({ ...options, agents: ['deploy_pipeline'] });
    expect(report).toMatchObject({ marks: 2, cleared: 1, recovered: [{ resumed: true }] });
    expect(await marks(store)).toEqual([]);
  });

  it('claims an instance id: a dead previous incarnation is named, a bad id is refused', async () => {
    const store = createMemoryStore();
    const first = await claimInstance(store, { instanceId: 'web-1', incarnation: 'one' });
    expect(first).toMatchObject({ previous: null, inUseBy: null });
    const second = await claimInstance(store, { instanceId: 'web-1', incarnation: 'two' });
    // The same process claims again (as a restarted container with pid 1 would): the previous is gone.
    expect(second).toMatchObject({ previous: 'one', inUseBy: null });
    await expect(claimInstance(store, { instanceId: 'a b' })).rejects.toThrow(/--instance-id must be/);
  });
});
